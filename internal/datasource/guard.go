package datasource

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"strings"
	"syscall"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/appruntime/appruntime/internal/apperr"
	"github.com/appruntime/appruntime/internal/config"
	"github.com/appruntime/appruntime/internal/gateway"
	"github.com/appruntime/appruntime/internal/store"
)

// ErrPlatformServer is the cause of a refused connection whose server is
// the platform's own Postgres server, whatever database it names: another
// database of that cluster still reads its shared catalogs (pg_authid, the
// live statements of pg_stat_activity) and, as a privileged role, changes
// the settings of every new platform connection (pg_db_role_setting).
// Callers see the generic connection failure at run time and a 400 when the
// integration is saved; the cause is for the operator's log and for tests.
var ErrPlatformServer = errors.New("datasource: the DSN reaches the platform's Postgres server, which is never a data source, whatever database it names")

// ErrServerUnidentified is the cause of a refused connection whose server
// cannot be told apart from the platform's: its role may read neither the
// system identifier (pg_control_system) nor the server's start time
// (pg_postmaster_start_time), both readable by every role unless revoked.
var ErrServerUnidentified = errors.New("datasource: the data source's server cannot be told apart from the platform's: its role may read neither pg_control_system() nor pg_postmaster_start_time()")

// identitySQL reads who a Postgres server is: its cluster's system
// identifier (shared by a primary and its streaming replicas, and the same
// whatever address, alias, database or proxy reached the server) and, for a
// role that may not call pg_control_system, the server's start time to the
// microsecond (pg_postmaster_start_time, which no two servers share; it
// changes when the server restarts, so the platform's is read again when it
// decides). Either is NULL where the role may not read it. Every name is
// schema-qualified, so a search_path in the DSN cannot substitute a function
// of the tenant's own.
const identitySQL = `SELECT
	CASE WHEN pg_catalog.has_function_privilege('pg_catalog.pg_control_system()', 'EXECUTE')
	THEN (SELECT system_identifier FROM pg_catalog.pg_control_system())::pg_catalog.text END,
	CASE WHEN pg_catalog.has_function_privilege('pg_catalog.pg_postmaster_start_time()', 'EXECUTE')
	THEN (EXTRACT(epoch FROM pg_catalog.pg_postmaster_start_time()))::pg_catalog.text END`

// PrivilegedRoles are the predefined roles a data source's or SQL tool's
// role may not be a member of: each reaches past the customer's tables (to
// write any table, read or write the server's files, run programs on it,
// signal other sessions' backends).
var PrivilegedRoles = []string{
	"pg_write_all_data", "pg_read_server_files", "pg_write_server_files",
	"pg_execute_server_program", "pg_signal_backend",
}

// connectSQL reads, after connecting, the server's identity (identitySQL)
// and what the connection's role is: a superuser, and which of
// PrivilegedRoles it is a member of, directly or not (pg_has_role's MEMBER;
// a role missing on an older server is no membership).
var connectSQL = `SELECT ids.*, r.rolname::pg_catalog.text, r.rolsuper::pg_catalog.text,
	pg_catalog.array_to_string(ARRAY(SELECT g.rolname FROM pg_catalog.pg_roles g
		WHERE g.rolname::pg_catalog.text = ANY ('{` + strings.Join(PrivilegedRoles, ",") + `}'::pg_catalog.text[])
		AND pg_catalog.pg_has_role(r.oid, g.oid, 'MEMBER') ORDER BY g.rolname), ',')
FROM (` + identitySQL + `) ids, pg_catalog.pg_roles r WHERE r.rolname = CURRENT_USER`

// PrivilegedRoleError is the cause of a refused connection whose role is a
// superuser or a member of one of PrivilegedRoles: a customer's role is a
// plain LOGIN role with grants on its own tables.
type PrivilegedRoleError struct {
	Role      string // the connection's role
	Privilege string // "superuser", or the predefined role it is a member of
}

func (e *PrivilegedRoleError) Error() string {
	if e.Privilege == "superuser" {
		return fmt.Sprintf("the role %q is a superuser", e.Role)
	}
	return fmt.Sprintf("the role %q is a member of %s", e.Role, e.Privilege)
}

// startTimeSQL reads the server's start time as identitySQL does.
const startTimeSQL = `SELECT (EXTRACT(epoch FROM pg_catalog.pg_postmaster_start_time()))::pg_catalog.text`

// Platform identifies the platform's Postgres server, which no data source
// may be, whatever database it names. The zero Platform (a SQLite platform)
// protects nothing.
type Platform struct {
	// SystemID is the server's system identifier; "" when the platform's
	// role may not read it.
	SystemID string
	// StartTime is the server's start time (seconds since the epoch, to
	// the microsecond) when it was identified: what decides when either
	// side may not read the system identifier.
	StartTime string
	// StartTimeFunc, when set, reads the server's start time again (it
	// changes when the server restarts); StartTime stands when it fails.
	StartTimeFunc func(ctx context.Context) (string, error)
	// Endpoints are the addresses DATABASE_URL reaches the server at,
	// resolved at start-up. When one is local (loopback), every address of
	// this host on that port stands for it too.
	Endpoints []netip.AddrPort
}

// IdentifyPlatform reads the identity of the platform's server, which
// DATABASE_URL databaseURL reaches and st is connected to. A SQLite
// platform has none. A Postgres one whose role may read neither the system
// identifier nor the start time is an error: no data source could then be
// told apart from it.
func IdentifyPlatform(ctx context.Context, st *store.Store, databaseURL string) (Platform, error) {
	var p Platform
	if st.Dialect != config.Postgres {
		return p, nil
	}
	var systemID, start *string
	if err := st.DB.WithContext(ctx).Raw(identitySQL).Row().Scan(&systemID, &start); err != nil {
		return p, fmt.Errorf("datasource: identify the platform's server: %w", err)
	}
	if systemID != nil {
		p.SystemID = *systemID
	}
	if start != nil {
		p.StartTime = *start
		p.StartTimeFunc = func(ctx context.Context) (string, error) {
			var s string
			err := st.DB.WithContext(ctx).Raw(startTimeSQL).Row().Scan(&s)
			return s, err
		}
	}
	if p.SystemID == "" && p.StartTime == "" {
		return p, errors.New("datasource: identify the platform's server: DATABASE_URL's role may read neither pg_control_system() nor pg_postmaster_start_time(), so no data source could be told apart from it; grant it EXECUTE on either")
	}
	p.Endpoints = endpointsOf(ctx, databaseURL)
	return p, nil
}

// protects reports whether p identifies a server (a Postgres platform).
func (p Platform) protects() bool {
	return p.SystemID != "" || p.StartTime != "" || len(p.Endpoints) > 0
}

// isServer reports whether the server whose system identifier and start
// time a connection read (either "" where its role may not) is the
// platform's. The system identifiers decide when both are known; else the
// start times; a server that shows neither cannot be told apart, and is an
// error (ErrServerUnidentified).
func (p Platform) isServer(ctx context.Context, systemID, start string) (bool, error) {
	switch {
	case p.SystemID == "" && p.StartTime == "":
		return false, nil // known by its addresses only
	case p.SystemID != "" && systemID != "":
		return systemID == p.SystemID, nil
	}
	platformStart := p.StartTime
	if p.StartTimeFunc != nil {
		if s, err := p.StartTimeFunc(ctx); err == nil && s != "" {
			platformStart = s
		}
	}
	if start == "" || platformStart == "" {
		return false, ErrServerUnidentified
	}
	return start == platformStart, nil
}

// endpointsOf resolves the hosts of a postgres:// URL (a unix socket has no
// address and is skipped; so is a host that does not resolve now, which the
// identity check still covers).
func endpointsOf(ctx context.Context, databaseURL string) []netip.AddrPort {
	cfg, err := pgconn.ParseConfig(databaseURL)
	if err != nil {
		return nil
	}
	var out []netip.AddrPort
	local := map[uint16]bool{}
	hosts := append([]*pgconn.FallbackConfig{{Host: cfg.Host, Port: cfg.Port}}, cfg.Fallbacks...)
	for _, h := range hosts {
		if network, _ := pgconn.NetworkAddress(h.Host, h.Port); network == "unix" {
			local[h.Port] = true
			continue
		}
		addrs, err := net.DefaultResolver.LookupNetIP(ctx, "ip", h.Host)
		if err != nil {
			continue
		}
		for _, a := range addrs {
			a = a.Unmap()
			out = append(out, netip.AddrPortFrom(a, h.Port))
			if isLocal(a) {
				local[h.Port] = true
			}
		}
	}
	// A server on this host is reached through any of its addresses.
	if ifaces, err := net.InterfaceAddrs(); err == nil && len(local) > 0 {
		for _, ia := range ifaces {
			prefix, err := netip.ParsePrefix(ia.String())
			if err != nil {
				continue
			}
			for port := range local {
				out = append(out, netip.AddrPortFrom(prefix.Addr().Unmap(), port))
			}
		}
	}
	return out
}

// isLocal reports whether a reaches this host whatever else it names.
func isLocal(a netip.Addr) bool { return a.IsLoopback() || a.IsUnspecified() }

// reaches reports whether a dial to ap reaches the platform's server.
func (p Platform) reaches(ap netip.AddrPort) bool {
	a := ap.Addr().Unmap()
	for _, e := range p.Endpoints {
		if e.Port() != ap.Port() {
			continue
		}
		if e.Addr() == a || (isLocal(e.Addr()) && isLocal(a)) {
			return true
		}
	}
	return false
}

// Guard is what a connection to a customer's database may reach: the
// addresses the gateway's SSRF guard admits (public ones, and Allow) and
// never the platform's Postgres server, whatever database a DSN names. Data
// sources and the SQL tools (postgres_execute_query, mssql_execute_query)
// connect through it alike: the same integration DSN is either. No setting
// turns the platform rule off.
type Guard struct {
	// Allow lists networks a customer's database may be at although they
	// are private, loopback or otherwise special (DATASOURCE_ALLOW_CIDRS).
	Allow []netip.Prefix
	// Platform is the platform's server, refused even inside Allow.
	Platform Platform
}

// Dialer is the dialer of a connection that is not Postgres (SQL Server):
// the SSRF guard with Allow. Only Postgres can be the platform's server.
func (g Guard) Dialer() *net.Dialer { return gateway.NewDialer(g.Allow) }

// PostgresConfig is the pool configuration of a connection to the Postgres
// database dsn names, which must pass CheckPostgresDSN (a refusal is
// apperr.Invalid and never quotes the password). What connects is what the
// DSN says, whatever this host's environment (PGPASSWORD, PGPORT, ~/.pgpass)
// would add; every dial goes through the guard, after DNS resolution, and a
// connection whose server turns out to be the platform's own is refused
// (ErrPlatformServer), whatever address or database reached it. It does not
// dial.
func (g Guard) PostgresConfig(dsn string) (*pgxpool.Config, error) {
	cfg, _, err := g.postgresConfig(dsn)
	return cfg, err
}

func (g Guard) postgresConfig(dsn string) (*pgxpool.Config, postgresDSN, error) {
	d, err := parsePostgresDSN(dsn)
	if err != nil {
		return nil, d, err
	}
	cfg, err := pgxpool.ParseConfig(d.connString())
	if err != nil {
		// The parse error may quote the DSN, password included: keep it out.
		return nil, d, errors.New("the DSN is not a valid Postgres connection string")
	}
	cc := &cfg.ConnConfig.Config
	cc.Host, cc.Port, cc.Database, cc.User, cc.Password = d.host, d.port, d.database, d.user, d.password
	for _, f := range cc.Fallbacks {
		f.Host, f.Port = d.host, d.port
	}
	cc.DialFunc = g.dialFunc()
	cc.AfterConnect = g.afterConnect
	return cfg, d, nil
}

// dialFunc returns the dial function of a pool: every dial is checked on
// the address it is about to connect to, after DNS resolution (so a name
// that re-resolves to a refused address is never reached), first by the
// gateway's guard, then against the platform's server, before a byte (or a
// password) is sent.
func (g Guard) dialFunc() pgconn.DialFunc {
	d := gateway.NewDialer(g.Allow)
	safe := d.Control
	d.Control = func(network, address string, c syscall.RawConn) error {
		if err := safe(network, address, c); err != nil {
			return err
		}
		ap, err := netip.ParseAddrPort(address)
		if err == nil && g.Platform.reaches(ap) {
			return ErrPlatformServer
		}
		return nil
	}
	return d.DialContext
}

// afterConnect refuses a connection whose server is the platform's own,
// whatever address, proxy or database reached it (Platform.isServer), and
// one whose role is privileged (*PrivilegedRoleError), on any server.
func (g Guard) afterConnect(ctx context.Context, conn *pgconn.PgConn) error {
	results, err := conn.Exec(ctx, connectSQL).ReadAll()
	if err != nil {
		return fmt.Errorf("datasource: identify the data source's server and role: %w", err)
	}
	if len(results) != 1 || len(results[0].Rows) != 1 || len(results[0].Rows[0]) != 5 {
		return errors.New("datasource: identify the data source's server and role: unexpected reply")
	}
	row := results[0].Rows[0]
	if g.Platform.protects() {
		same, err := g.Platform.isServer(ctx, string(row[0]), string(row[1]))
		if err != nil {
			return err
		}
		if same {
			return ErrPlatformServer
		}
	}
	role := string(row[2])
	if string(row[3]) == "true" {
		return &PrivilegedRoleError{Role: role, Privilege: "superuser"}
	}
	if member := string(row[4]); member != "" {
		first, _, _ := strings.Cut(member, ",")
		return &PrivilegedRoleError{Role: role, Privilege: first}
	}
	return nil
}

// CheckPostgres connects once to dsn through the guard, as a data source or
// a SQL tool would, and refuses as a 400 for the admin saving the
// integration what every later connection would refuse: a DSN that breaks
// CheckPostgresDSN, the platform's own server (by address or identity,
// whatever database the DSN names), a server that cannot be told apart
// from it, and a privileged role (named with its privilege). A server it cannot reach or log into (down, not yet opened to
// this network, wrong password, the SSRF guard) is no refusal: the save
// stands, and every connection answers the data sources' one 502 until it
// is fixed; refusing it would also tell an admin which addresses answer.
func (g Guard) CheckPostgres(ctx context.Context, dsn string) error {
	refusal, _ := g.connectPostgres(ctx, dsn)
	return refusal
}

// TestPostgres connects once to dsn as CheckPostgres does (the admin's
// "test connection") and, where CheckPostgres lets a server it cannot reach
// pass, says why it could not connect too: the SSRF guard refused the
// address, the server refused the user or password, it named no such
// database, or it could not be reached (502). A refusal is CheckPostgres's.
// No message quotes the DSN.
func (g Guard) TestPostgres(ctx context.Context, dsn string) error {
	refusal, err := g.connectPostgres(ctx, dsn)
	if refusal != nil || err == nil {
		return refusal
	}
	var pgErr *pgconn.PgError
	switch {
	case gateway.IsBlocked(err):
		return apperr.Wrap(err, apperr.Invalid, "%s", gateway.BlockedReason)
	case errors.As(err, &pgErr) && strings.HasPrefix(pgErr.Code, "28"):
		return apperr.Wrap(err, apperr.BadGateway, "the server refused the DSN's user or password (%s)", pgErr.Code)
	case errors.As(err, &pgErr) && pgErr.Code == "3D000":
		return apperr.Wrap(err, apperr.BadGateway, "the server has no database of the name the DSN gives")
	case errors.As(err, &pgErr):
		return apperr.Wrap(err, apperr.BadGateway, "the server refused the connection (SQLSTATE %s)", pgErr.Code)
	case errors.Is(err, context.DeadlineExceeded):
		return apperr.Wrap(err, apperr.BadGateway, "the server did not answer within %s", ConnectTimeout)
	}
	return apperr.Wrap(err, apperr.BadGateway, "could not connect to the DSN's host and port (down, not listening, or not open to this network)")
}

// connectPostgres connects once to dsn through the guard and closes the
// connection. refusal is what CheckPostgres refuses (400); err is why a
// connection that is no refusal failed.
func (g Guard) connectPostgres(ctx context.Context, dsn string) (refusal, err error) {
	cfg, err := g.PostgresConfig(dsn)
	if err != nil {
		if apperr.CodeOf(err) == apperr.Invalid {
			return err, nil
		}
		return apperr.Wrap(err, apperr.Invalid, "%s", err.Error()), nil
	}
	cc := &cfg.ConnConfig.Config
	if cc.ConnectTimeout <= 0 || cc.ConnectTimeout > ConnectTimeout {
		cc.ConnectTimeout = ConnectTimeout
	}
	conn, err := pgconn.ConnectConfig(ctx, cc)
	if err == nil {
		_ = conn.Close(ctx)
		return nil, nil
	}
	var privileged *PrivilegedRoleError
	switch {
	case errors.Is(err, ErrPlatformServer):
		return apperr.Wrap(err, apperr.Invalid, "the DSN reaches the platform's own Postgres server, which is never a data source, whatever database it names: a customer's database must be on a server of its own"), nil
	case errors.As(err, &privileged):
		return apperr.Wrap(err, apperr.Invalid, "%s; a data source's role must be a plain LOGIN role, not a superuser nor a member of %s, with grants on its own tables only",
			privileged.Error(), strings.Join(PrivilegedRoles, ", ")), nil
	case errors.Is(err, ErrServerUnidentified):
		return apperr.Wrap(err, apperr.Invalid, "the data source's role may read neither pg_catalog.pg_control_system() nor pg_catalog.pg_postmaster_start_time(), so its server cannot be told apart from the platform's: grant it EXECUTE on either"), nil
	}
	return nil, err
}
