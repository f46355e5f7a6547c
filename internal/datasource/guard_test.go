package datasource_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgproto3"
	"github.com/stretchr/testify/require"

	"github.com/appruntime/appruntime/internal/apperr"
	"github.com/appruntime/appruntime/internal/datasource"
	"github.com/appruntime/appruntime/internal/gateway"
	"github.com/appruntime/appruntime/internal/testkit"
)

// withHost returns dsn with its host:port replaced.
func withHost(t *testing.T, dsn, hostPort string) string {
	t.Helper()
	u, err := url.Parse(dsn)
	require.NoError(t, err)
	u.Host = hostPort
	return u.String()
}

// withDatabase returns dsn naming database db.
func withDatabase(t *testing.T, dsn, db string) string {
	t.Helper()
	u, err := url.Parse(dsn)
	require.NoError(t, err)
	u.Path = "/" + db
	return u.String()
}

// selectVia opens dsn through a registry with o and runs one select; it
// returns the select's error.
func selectVia(t *testing.T, o datasource.Options, dsn string) error {
	t.Helper()
	reg := datasource.NewRegistry(box(t), o)
	t.Cleanup(reg.Close)
	src, err := reg.Source(context.Background(), integration(t, datasource.KindPostgres, dsn))
	if err != nil {
		return err
	}
	_, err = src.Select(context.Background(), datasource.SelectQuery{Table: "pg_catalog.pg_class", Columns: []string{"relname"}, Limit: 1})
	return err
}

func TestPostgresDSNRules(t *testing.T) {
	t.Parallel()
	ok := []string{
		"postgres://reader:s3cret@db.example.com:5433/invoices?sslmode=verify-full&search_path=sales",
		"postgresql://reader@10.1.2.3/invoices",
		"postgres://reader@[2001:db8::1]:5432/invoices?connect_timeout=3&application_name=x&pool_max_conns=4",
	}
	for _, dsn := range ok {
		require.NoError(t, datasource.CheckPostgresDSN(dsn), dsn)
	}
	cases := []struct{ dsn, message string }{
		{"host=db.example.com dbname=invoices user=reader", "must be a URL"},
		{"postgres://reader@/invoices?host=/var/run/postgresql", "must name a host (unix sockets are not allowed)"},
		{"postgres://reader@db.example.com/invoices?host=/tmp", `DSN parameter "host" is not allowed`},
		{"postgres://reader@%2Fvar%2Frun%2Fpostgresql/invoices", "not a valid Postgres connection string"},
		{"postgres://reader@db.example.com/invoices?hostaddr=127.0.0.1", `DSN parameter "hostaddr" is not allowed`},
		{"postgres://reader@db.example.com/invoices?port=5433", `DSN parameter "port" is not allowed`},
		{"postgres://reader@db.example.com/invoices?dbname=appruntime", `DSN parameter "dbname" is not allowed`},
		{"postgres://reader@db.example.com/invoices?user=postgres", `DSN parameter "user" is not allowed`},
		{"postgres://reader@db.example.com/invoices?password=x", `DSN parameter "password" is not allowed`},
		{"postgres://reader@db.example.com/invoices?passfile=/etc/shadow", `DSN parameter "passfile" is not allowed`},
		{"postgres://reader@db.example.com/invoices?service=prod", `DSN parameter "service" is not allowed`},
		{"postgres://reader@db.example.com/invoices?servicefile=/etc/passwd", `DSN parameter "servicefile" is not allowed`},
		{"postgres://reader@db.example.com/invoices?sslkey=/root/.ssh/id_rsa", `DSN parameter "sslkey" is not allowed`},
		{"postgres://reader@db.example.com/invoices?sslcert=/etc/x.crt", `DSN parameter "sslcert" is not allowed`},
		{"postgres://reader@db.example.com/invoices?sslrootcert=/etc/x.crt", `DSN parameter "sslrootcert" is not allowed`},
		{"postgres://reader@db.example.com/invoices?options=-c%20role%3Dx", `DSN parameter "options" is not allowed`},
		{"postgres://reader@a.example.com,b.example.com/invoices", "one host, not a list"},
		{"postgres://reader@db_example!/invoices", "must be a DNS name or an IP address"},
		{"postgres://reader@[fe80::1%25eth0]/invoices", "must not carry an IPv6 zone"},
		{"postgres://db.example.com/invoices", "must name a user"},
		{"postgres://reader:hunter2@db.example.com", "must name one database"},
		{"postgres://reader@db.example.com:0/invoices", "port must be a number from 1 to 65535"},
		{"postgres://reader@db.example.com/invoices?sslmode=maybe", "sslmode must be one of"},
		{"postgres://reader@db.example.com/invoices?sslmode=require&sslmode=disable", `"sslmode" is given more than once`},
		{"postgres://reader:hunter2@[::1:5432/db", "not a valid Postgres connection string"},
	}
	for _, tc := range cases {
		t.Run(tc.dsn, func(t *testing.T) {
			t.Parallel()
			err := datasource.CheckPostgresDSN(tc.dsn)
			require.Equal(t, apperr.Invalid, apperr.CodeOf(err), "%v", err)
			_, _, msg := apperr.Public(err)
			require.Contains(t, msg, tc.message)
			require.NotContains(t, msg, "hunter2")
		})
	}
}

// TestDataSourceAddressesAreGuarded: with no allow-list (the default) a data
// source reaches no loopback, link-local (cloud metadata), private or unix
// socket address; allowing loopback lets the tests' data-source database
// through and nothing else.
func TestDataSourceAddressesAreGuarded(t *testing.T) {
	t.Parallel()
	good := testkit.DataSourceURL(t)
	_, port, err := net.SplitHostPort(mustURL(t, good).Host)
	require.NoError(t, err)

	blocked := map[string]string{
		"127.0.0.1":       withHost(t, good, "127.0.0.1:"+port),
		"localhost":       withHost(t, good, "localhost:"+port),
		"[::1]":           withHost(t, good, "[::1]:"+port),
		"169.254.169.254": withHost(t, good, "169.254.169.254:5432"),
		"10.0.0.1":        withHost(t, good, "10.0.0.1:5432"),
		"0.0.0.0":         withHost(t, good, "0.0.0.0:"+port),
	}
	for name, dsn := range blocked {
		t.Run("off/"+name, func(t *testing.T) {
			t.Parallel()
			start := time.Now()
			err := selectVia(t, datasource.Options{}, dsn)
			require.Equal(t, apperr.BadGateway, apperr.CodeOf(err), "%v", err)
			require.True(t, gateway.IsBlocked(err), "refused by the guard before any connection: %v", err)
			require.Less(t, time.Since(start), 2*time.Second, "refused at once, not timed out")
		})
	}
	t.Run("unix socket", func(t *testing.T) {
		t.Parallel()
		for _, o := range []datasource.Options{{}, {Allow: testkit.Loopback}} {
			err := selectVia(t, o, "postgres://postgres@/test?host=/var/run/postgresql")
			require.Equal(t, apperr.BadGateway, apperr.CodeOf(err), "%v", err)
			_, _, msg := apperr.Public(err)
			require.Contains(t, msg, "unix sockets are not allowed")
		}
	})

	on := datasource.Options{Allow: testkit.Loopback}
	for _, host := range []string{"127.0.0.1:" + port, "localhost:" + port} {
		t.Run("on/"+host, func(t *testing.T) {
			t.Parallel()
			require.NoError(t, selectVia(t, on, withHost(t, good, host)))
		})
	}
	t.Run("on/metadata stays blocked", func(t *testing.T) {
		t.Parallel()
		err := selectVia(t, on, withHost(t, good, "169.254.169.254:5432"))
		require.True(t, gateway.IsBlocked(err), "%v", err)
	})
}

func mustURL(t *testing.T, raw string) *url.URL {
	t.Helper()
	u, err := url.Parse(raw)
	require.NoError(t, err)
	return u
}

// platformIdentity identifies the tests' platform server as a platform
// process does at start.
func platformIdentity(t *testing.T) datasource.Platform {
	t.Helper()
	p, err := datasource.IdentifyPlatform(context.Background(), testkit.Tx(t), testkit.DatabaseURL())
	require.NoError(t, err)
	require.NotEmpty(t, p.SystemID, "the tests' role may read the system identifier")
	require.NotEmpty(t, p.StartTime)
	require.NotEmpty(t, p.Endpoints)
	return p
}

// TestPlatformServerIsNeverADataSource: whatever address, alias, schema or
// database a DSN names, the platform's own server is refused even where its
// address is allowed, by its address before connecting and by its identity
// after; a server of its own (the tests' data-source cluster) is not.
// Before the rule was the server's, another database of the platform's
// cluster (postgres://postgres@127.0.0.1:5432/postgres) was a data source
// and read pg_catalog.pg_authid.
func TestPlatformServerIsNeverADataSource(t *testing.T) {
	t.Parallel()
	platform := platformIdentity(t)
	platformURL := testkit.DatabaseURL()
	_, port, err := net.SplitHostPort(mustURL(t, platformURL).Host)
	require.NoError(t, err)
	full := datasource.Options{Allow: testkit.Loopback, Platform: platform}
	byID := datasource.Options{Allow: testkit.Loopback, Platform: datasource.Platform{SystemID: platform.SystemID, StartTime: platform.StartTime}}
	byStart := datasource.Options{Allow: testkit.Loopback, Platform: datasource.Platform{StartTime: platform.StartTime}}
	byAddress := datasource.Options{Allow: testkit.Loopback, Platform: datasource.Platform{Endpoints: platform.Endpoints}}
	otherDB := withDatabase(t, platformURL, "postgres")

	refused := []struct {
		name string
		o    datasource.Options
		dsn  string
	}{
		{"DATABASE_URL itself", full, platformURL},
		{"another database of the platform's server", full, otherDB},
		{"localhost alias", full, withHost(t, otherDB, "localhost:"+port)},
		{"IPv6 loopback alias", full, withHost(t, otherDB, "[::1]:"+port)},
		{"another schema", full, platformURL + "&search_path=pg_catalog"},
		{"address unknown: the system identifier decides", byID, otherDB},
		{"system identifier unknown: the start time decides", byStart, otherDB},
		{"identity unknown: the address decides", byAddress, otherDB},
	}
	for _, tc := range refused {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			err := selectVia(t, tc.o, tc.dsn)
			require.True(t, errors.Is(err, datasource.ErrPlatformServer), "%v", err)
			require.Equal(t, apperr.BadGateway, apperr.CodeOf(err))
			_, _, msg := apperr.Public(err)
			require.Equal(t, connectFailedMessage(t), msg, "the refusal looks like any failed connection")
		})
	}

	for name, o := range map[string]datasource.Options{"full": full, "by id": byID, "by start time": byStart} {
		t.Run("a server of its own/"+name, func(t *testing.T) {
			t.Parallel()
			require.NoError(t, selectVia(t, o, testkit.DataSourceURL(t)))
		})
	}
}

// TestPlatformServerIsRefusedAtSave: the check an integration's save runs
// answers 400 for the platform's server, by address or by identity, and
// lets a server of its own and one it cannot reach be saved.
func TestPlatformServerIsRefusedAtSave(t *testing.T) {
	t.Parallel()
	platform := platformIdentity(t)
	otherDB := withDatabase(t, testkit.DatabaseURL(), "postgres")
	ctx := context.Background()
	for name, g := range map[string]datasource.Guard{
		"by address":  {Allow: testkit.Loopback, Platform: platform},
		"by identity": {Allow: testkit.Loopback, Platform: datasource.Platform{SystemID: platform.SystemID}},
	} {
		err := g.CheckPostgres(ctx, otherDB)
		require.True(t, errors.Is(err, datasource.ErrPlatformServer), "%s: %v", name, err)
		_, status, msg := apperr.Public(err)
		require.Equal(t, 400, status, name)
		require.Contains(t, msg, "the platform's own Postgres server", name)
	}
	g := datasource.Guard{Allow: testkit.Loopback, Platform: platform}
	require.NoError(t, g.CheckPostgres(ctx, testkit.DataSourceURL(t)))
	require.NoError(t, g.CheckPostgres(ctx, "postgres://u:p@127.0.0.1:1/db"), "an unreachable server does not stop the save")
	require.NoError(t, datasource.Guard{Platform: platform}.CheckPostgres(ctx, testkit.DataSourceURL(t)), "nor does an address the SSRF guard refuses")
	err := g.CheckPostgres(ctx, "postgres://u@db.example.com/x?passfile=/etc/shadow")
	require.Equal(t, apperr.Invalid, apperr.CodeOf(err), "%v", err)
}

// connectFailedMessage is what every failed connection answers.
func connectFailedMessage(t *testing.T) string {
	t.Helper()
	err := selectVia(t, datasource.Options{}, "postgres://u@127.0.0.1:1/db")
	_, _, msg := apperr.Public(err)
	return msg
}

// standIn is a local server speaking the Postgres protocol: it asks for a
// password and refuses it, or, when silent, accepts and never answers.
func standIn(t *testing.T, silent bool) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			conn, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer conn.Close()
				if silent {
					_, _ = conn.Read(make([]byte, 1024))
					time.Sleep(5 * time.Second)
					return
				}
				b := pgproto3.NewBackend(conn, conn)
				if _, err := b.ReceiveStartupMessage(); err != nil {
					return
				}
				b.Send(&pgproto3.AuthenticationCleartextPassword{})
				_ = b.SetAuthType(pgproto3.AuthTypeCleartextPassword)
				if b.Flush() != nil {
					return
				}
				if _, err := b.Receive(); err != nil {
					return
				}
				b.Send(&pgproto3.ErrorResponse{Severity: "FATAL", Code: "28P01", Message: `password authentication failed for user "reader"`})
				_ = b.Flush()
			}()
		}
	}()
	return ln.Addr().String()
}

// TestConnectionFailuresLookTheSame: refused, closed, silent, bad password,
// unknown role or database and the platform's own server all answer the
// same status and message, so a data source cannot be used to scan a
// network; the cause is kept for the operator's log.
func TestConnectionFailuresLookTheSame(t *testing.T) {
	t.Parallel()
	good := testkit.DataSourceURL(t)
	on := datasource.Options{Allow: testkit.Loopback, Platform: platformIdentity(t)}
	closed, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	closedAddr := closed.Addr().String()
	closed.Close()

	cases := []struct {
		name  string
		o     datasource.Options
		dsn   string
		cause string
	}{
		{"address refused by the guard", datasource.Options{}, good, "prohibited IP"},
		{"closed port", on, "postgres://reader@" + closedAddr + "/db", "connection refused"},
		{"silent server (timeout)", on, "postgres://reader@" + standIn(t, true) + "/db?sslmode=disable&connect_timeout=1", "timeout"},
		{"bad password", on, "postgres://reader:wrong@" + standIn(t, false) + "/db?sslmode=disable", "28P01"},
		{"unknown role", on, strings.Replace(good, testkit.DataSourceRole()+"@", "nobody_here@", 1), "28000"},
		{"unknown database", on, withDatabase(t, good, "no_such_database"), "3D000"},
		{"platform server", on, withDatabase(t, testkit.DatabaseURL(), "postgres"), datasource.ErrPlatformServer.Error()},
	}
	want := connectFailedMessage(t)
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			err := selectVia(t, tc.o, tc.dsn)
			code, status, msg := apperr.Public(err)
			require.Equal(t, apperr.BadGateway, code, "%v", err)
			require.Equal(t, 502, status)
			require.Equal(t, want, msg)
			require.Contains(t, err.Error(), tc.cause, "the cause is kept for the operator's log")
		})
	}
}

// privilegedRole makes a LOGIN role on the data sources' server with attrs
// (such as SUPERUSER) and membership in grant (directly, or through a group
// of its own when indirect), dropped at cleanup, and returns a DSN of the
// tests' data-source database as that role.
func privilegedRole(t *testing.T, attrs, grant string, indirect bool) string {
	t.Helper()
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, testkit.DataSourceAdminURL())
	require.NoError(t, err)
	t.Cleanup(func() { conn.Close(context.Background()) })
	name := fmt.Sprintf("ds_priv_%d", time.Now().UnixNano())
	group := name + "_group"
	_, err = conn.Exec(ctx, "CREATE ROLE "+name+" LOGIN "+attrs)
	require.NoError(t, err)
	t.Cleanup(func() {
		_, _ = conn.Exec(context.Background(), "DROP ROLE IF EXISTS "+name)
		_, _ = conn.Exec(context.Background(), "DROP ROLE IF EXISTS "+group)
	})
	if grant != "" {
		to := name
		if indirect {
			_, err = conn.Exec(ctx, "CREATE ROLE "+group+" NOLOGIN")
			require.NoError(t, err)
			_, err = conn.Exec(ctx, "GRANT "+group+" TO "+name)
			require.NoError(t, err)
			to = group
		}
		_, err = conn.Exec(ctx, "GRANT "+grant+" TO "+to)
		require.NoError(t, err)
	}
	u := mustURL(t, testkit.DataSourceDatabaseURL())
	u.User = url.User(name)
	return u.String()
}

// TestPrivilegedRolesAreRefused: a data source whose role is a superuser or
// a member (directly or through a group) of a predefined role that reaches
// past its tables is refused after connecting, at run time with the data
// sources' one 502 and at save with a 400 naming the privilege; a plain
// role is not. Before, a superuser data source connected and read
// pg_catalog.pg_authid.
func TestPrivilegedRolesAreRefused(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	o := datasource.Options{Allow: testkit.Loopback, Platform: platformIdentity(t)}
	g := datasource.Guard{Allow: o.Allow, Platform: o.Platform}
	cases := []struct {
		name, attrs, grant string
		indirect           bool
		privilege          string
	}{
		{"superuser", "SUPERUSER", "", false, "superuser"},
		{"pg_signal_backend through a group", "", "pg_signal_backend", true, "pg_signal_backend"},
	}
	for _, r := range datasource.PrivilegedRoles {
		cases = append(cases, struct {
			name, attrs, grant string
			indirect           bool
			privilege          string
		}{r, "", r, false, r})
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			dsn := privilegedRole(t, tc.attrs, tc.grant, tc.indirect)
			err := selectVia(t, o, dsn)
			var privileged *datasource.PrivilegedRoleError
			require.ErrorAs(t, err, &privileged)
			require.Equal(t, tc.privilege, privileged.Privilege)
			_, status, msg := apperr.Public(err)
			require.Equal(t, 502, status)
			require.Equal(t, connectFailedMessage(t), msg)

			err = g.CheckPostgres(ctx, dsn)
			_, status, msg = apperr.Public(err)
			require.Equal(t, 400, status, "%v", err)
			require.Contains(t, msg, tc.privilege)
			require.Contains(t, msg, "a data source's role must be a plain LOGIN role")
		})
	}
	t.Run("a plain role", func(t *testing.T) {
		t.Parallel()
		dsn := privilegedRole(t, "", "", false)
		err := selectVia(t, o, dsn)
		require.NoError(t, err)
		require.NoError(t, g.CheckPostgres(ctx, dsn))
	})
}
