package datasource

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"syscall"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/appruntime/appruntime/internal/config"
	"github.com/appruntime/appruntime/internal/gateway"
	"github.com/appruntime/appruntime/internal/store"
)

// ErrPlatformDatabase is the cause of a refused connection whose database is
// the platform's own. Callers see the generic connection failure; the cause
// is for the operator's log and for tests.
var ErrPlatformDatabase = errors.New("datasource: the DSN reaches the platform database, which is never a data source")

// identitySQL reads who a Postgres database is: its name and its cluster's
// system identifier (shared by a primary and its streaming replicas, and
// the same whatever address, alias or proxy reached the server). The system
// identifier is NULL where the role may not call pg_control_system. Every
// name is schema-qualified, so a search_path in the DSN cannot substitute
// a function of the tenant's own.
const identitySQL = `SELECT pg_catalog.current_database(),
	CASE WHEN pg_catalog.has_function_privilege('pg_catalog.pg_control_system()', 'EXECUTE')
	THEN (SELECT system_identifier FROM pg_catalog.pg_control_system())::text END`

// Platform identifies the platform database, which no data source may be:
// a data source pointed at it could read every workspace's tokens and
// password hashes. The zero Platform (a SQLite platform) protects nothing.
type Platform struct {
	// Database is the platform database's name (current_database()).
	Database string
	// SystemID is its server's system identifier; "" when the platform's
	// role may not read it, in which case every data source whose database
	// has the platform's name is refused.
	SystemID string
	// Endpoints are the addresses DATABASE_URL reaches the server at,
	// resolved at start-up. When one is local (loopback), every address of
	// this host on that port stands for it too.
	Endpoints []netip.AddrPort
}

// IdentifyPlatform reads the identity of the platform database st, which
// DATABASE_URL databaseURL reaches. A SQLite platform has none.
func IdentifyPlatform(ctx context.Context, st *store.Store, databaseURL string) (Platform, error) {
	var p Platform
	if st.Dialect != config.Postgres {
		return p, nil
	}
	var row struct {
		Name     string
		SystemID *string
	}
	if err := st.DB.WithContext(ctx).Raw(identitySQL).Row().Scan(&row.Name, &row.SystemID); err != nil {
		return p, fmt.Errorf("datasource: identify the platform database: %w", err)
	}
	p.Database = row.Name
	if row.SystemID != nil {
		p.SystemID = *row.SystemID
	}
	p.Endpoints = endpointsOf(ctx, databaseURL)
	return p, nil
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
// never the platform database. Data sources and the SQL tools
// (postgres_execute_query, mssql_execute_query) connect through it alike:
// the same integration DSN is either.
type Guard struct {
	// Allow lists networks a customer's database may be at although they
	// are private, loopback or otherwise special (DATASOURCE_ALLOW_CIDRS).
	Allow []netip.Prefix
	// Platform is the platform database, refused even inside Allow.
	Platform Platform
}

// Dialer is the dialer of a connection that is not Postgres (SQL Server):
// the SSRF guard with Allow. Only Postgres can be the platform database.
func (g Guard) Dialer() *net.Dialer { return gateway.NewDialer(g.Allow) }

// PostgresConfig is the pool configuration of a connection to the Postgres
// database dsn names, which must pass CheckPostgresDSN (a refusal is
// apperr.Invalid and never quotes the password). What connects is what the
// DSN says, whatever this host's environment (PGPASSWORD, PGPORT, ~/.pgpass)
// would add; every dial goes through the guard, after DNS resolution, and a
// connection whose database turns out to be the platform's own is refused
// (ErrPlatformDatabase), whatever address reached it. It does not dial.
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
	cc.DialFunc = g.dialFunc(d.database)
	cc.AfterConnect = g.afterConnect
	return cfg, d, nil
}

// dialFunc returns the dial function of a pool on database: every dial is
// checked on the address it is about to connect to, after DNS resolution
// (so a name that re-resolves to a refused address is never reached), first
// by the gateway's guard, then against the platform database's server.
func (g Guard) dialFunc(database string) pgconn.DialFunc {
	d := gateway.NewDialer(g.Allow)
	safe := d.Control
	d.Control = func(network, address string, c syscall.RawConn) error {
		if err := safe(network, address, c); err != nil {
			return err
		}
		ap, err := netip.ParseAddrPort(address)
		if err == nil && database == g.Platform.Database && g.Platform.reaches(ap) {
			return ErrPlatformDatabase
		}
		return nil
	}
	return d.DialContext
}

// afterConnect refuses a connection whose database is the platform's own,
// whatever address reached it: same name and same server identity, or same
// name where either identity cannot be read (it cannot be told apart).
func (g Guard) afterConnect(ctx context.Context, conn *pgconn.PgConn) error {
	if g.Platform.Database == "" {
		return nil
	}
	results, err := conn.Exec(ctx, identitySQL).ReadAll()
	if err != nil {
		return fmt.Errorf("datasource: identify the data source's database: %w", err)
	}
	if len(results) != 1 || len(results[0].Rows) != 1 || len(results[0].Rows[0]) != 2 {
		return errors.New("datasource: identify the data source's database: unexpected reply")
	}
	row := results[0].Rows[0]
	if string(row[0]) != g.Platform.Database {
		return nil
	}
	if row[1] == nil || g.Platform.SystemID == "" || string(row[1]) == g.Platform.SystemID {
		return ErrPlatformDatabase
	}
	return nil
}
