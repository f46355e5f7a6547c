package postgres

import "strings"

// Why a function is refused, for the functions known to be dangerous: the
// allow list (allowedFunctions) refuses every function it does not name;
// these say why for the ones a query is most likely to try.
const (
	whySession    = "acts on other sessions"
	whySettings   = "changes server settings"
	whySequence   = "changes a sequence, and that is never rolled back"
	whyLock       = "takes a lock that outlives the statement"
	whyFiles      = "reads or writes the database server's files"
	whyLargeObj   = "reads or writes large objects on the server"
	whyRemote     = "connects from the database server to another server"
	whyDynamicSQL = "runs SQL text that this check never sees"
	whySleep      = "only holds a connection"
	whyNotify     = "sends a notification to other sessions"
	whyXID        = "assigns a transaction id, a write to shared state"
	whyAdmin      = "is a server administration function"
	whyStats      = "resets the server's statistics"
	whyWAL        = "writes to the write-ahead log or replication state"
	whyDump       = "dumps a whole schema or database"
	whyTextSearch = "runs the SQL text of its argument, which this check never sees"
)

// deniedFunctions say why these are refused, by their unqualified name.
var deniedFunctions = map[string]string{
	"ts_stat": whyTextSearch, "ts_rewrite": whyTextSearch,
	"pg_terminate_backend": whySession, "pg_cancel_backend": whySession,
	"pg_log_backend_memory_contexts": whySession,
	"set_config":                     whySettings, "pg_reload_conf": whySettings,
	"nextval": whySequence, "setval": whySequence,
	"pg_read_file": whyFiles, "pg_read_binary_file": whyFiles, "pg_stat_file": whyFiles,
	"loread": whyLargeObj, "lowrite": whyLargeObj,
	"query_to_xml": whyDynamicSQL, "query_to_xmlschema": whyDynamicSQL, "query_to_xml_and_xmlschema": whyDynamicSQL,
	"pg_sleep": whySleep, "pg_sleep_for": whySleep, "pg_sleep_until": whySleep,
	"pg_notify":    whyNotify,
	"txid_current": whyXID, "pg_current_xact_id": whyXID,
	"pg_rotate_logfile": whyAdmin, "pg_promote": whyAdmin, "pg_import_system_collations": whyAdmin,
	"pg_switch_wal": whyWAL, "pg_create_restore_point": whyWAL, "pg_backup_start": whyWAL,
	"pg_backup_stop": whyWAL, "pg_start_backup": whyWAL, "pg_stop_backup": whyWAL,
	"pg_stat_statements_reset": whyStats,
	"http":                     whyRemote,
}

// deniedPrefixes say why these families are refused.
var deniedPrefixes = []struct{ prefix, why string }{
	{"dblink", whyRemote},             // dblink, dblink_exec, dblink_connect…
	{"http_", whyRemote},              // the pgsql-http and pg_net extensions
	{"lo_", whyLargeObj},              // lo_import, lo_export, lo_create, lo_unlink…
	{"pg_advisory", whyLock},          // pg_advisory_lock, pg_advisory_xact_lock…
	{"pg_try_advisory", whyLock},      // and their try_ forms
	{"pg_ls_", whyFiles},              // pg_ls_dir, pg_ls_logdir, pg_ls_waldir…
	{"pg_file_", whyFiles},            // adminpack's pg_file_write, pg_file_unlink…
	{"pg_stat_reset", whyStats},       // pg_stat_reset, pg_stat_reset_shared…
	{"pg_logical_", whyWAL},           // pg_logical_emit_message, pg_logical_slot_get_changes…
	{"pg_replication_origin", whyWAL}, // pg_replication_origin_create…
	{"pg_wal_replay", whyAdmin},       // pg_wal_replay_pause…
	{"pg_background", whyDynamicSQL},  // runs SQL in a worker that commits on its own
	{"cursor_to_xml", whyDynamicSQL},
	{"database_to_xml", whyDump},
	{"schema_to_xml", whyDump},
}

// deniedFunction says why name is known to be dangerous, or "" when it is
// not one of those.
func deniedFunction(name string) string {
	if why, ok := deniedFunctions[name]; ok {
		return why
	}
	if strings.Contains(name, "replication_slot") {
		return whyWAL // pg_create_logical_replication_slot, pg_drop_replication_slot…
	}
	for _, p := range deniedPrefixes {
		if strings.HasPrefix(name, p.prefix) {
			return p.why
		}
	}
	return ""
}
