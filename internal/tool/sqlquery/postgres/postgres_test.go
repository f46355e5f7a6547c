package postgres_test

import (
	"context"
	"encoding/json"
	"net/netip"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/appruntime/appruntime/internal/apperr"
	"github.com/appruntime/appruntime/internal/crypt"
	"github.com/appruntime/appruntime/internal/datasource"
	"github.com/appruntime/appruntime/internal/gateway"
	"github.com/appruntime/appruntime/internal/testkit"
	"github.com/appruntime/appruntime/internal/tool"
	"github.com/appruntime/appruntime/internal/tool/sqlquery"
	"github.com/appruntime/appruntime/internal/tool/sqlquery/postgres"
	"github.com/appruntime/appruntime/models"
)

var loopback = []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}

// guardOf is the data sources' guard of a process on the tests' platform
// database, with loopback allowed.
func guardOf(t *testing.T) datasource.Guard {
	t.Helper()
	p, err := datasource.IdentifyPlatform(context.Background(), testkit.Tx(t), testkit.DatabaseURL())
	require.NoError(t, err)
	require.NotEmpty(t, p.SystemID)
	return datasource.Guard{Allow: loopback, Platform: p}
}

// customerDB is a schema of the test's own standing in for a customer's
// database: a table of invoices and two functions that try to leave traces.
type customerDB struct {
	dsn   string
	admin *pgx.Conn
	box   *crypt.Box
	integ *models.Integration
}

func newCustomerDB(t *testing.T) *customerDB {
	t.Helper()
	dsn := testkit.DataSourceURL(t) // never the platform's server, which the guard refuses
	ctx := context.Background()
	admin, err := pgx.Connect(ctx, dsn)
	require.NoError(t, err)
	t.Cleanup(func() { admin.Close(context.Background()) })
	_, err = admin.Exec(ctx, `
CREATE TABLE cust_invoices (id int PRIMARY KEY, customer text NOT NULL, total numeric(12,2), issued date, paid_at timestamptz);
INSERT INTO cust_invoices VALUES
  (1, 'acme', 120.50, '2024-01-31', '2024-02-03 10:00:00+00'),
  (2, 'acme', 99.99, '2024-02-29', NULL),
  (3, 'globex', 5, '2024-03-01', NULL);
CREATE FUNCTION cust_sneaky_write() RETURNS int LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO cust_invoices VALUES (99, 'mallory', 0, NULL, NULL);
  RETURN 1;
END $$;
CREATE FUNCTION cust_leave_traces() RETURNS int LANGUAGE plpgsql AS $$
BEGIN
  PERFORM set_config('app.trace', 'left behind', false);
  PERFORM pg_advisory_lock(4242);
  RETURN 1;
END $$;`)
	require.NoError(t, err)
	box, err := crypt.New(testkit.TestKey)
	require.NoError(t, err)
	db := &customerDB{dsn: dsn, admin: admin, box: box}
	db.integ = db.integration(t, dsn)
	return db
}

func (db *customerDB) integration(t *testing.T, dsn string) *models.Integration {
	t.Helper()
	sealed, err := db.box.SealJSON(sqlquery.Secrets{DSN: dsn})
	require.NoError(t, err)
	return &models.Integration{ID: models.NewID(), Name: "crm", Kind: postgres.IntegrationKind, SecretsEnc: sealed}
}

func (db *customerDB) call(query, input string) tool.Call {
	return tool.Call{
		BaseTool:    models.BasePostgresQuery,
		Tool:        &models.ConfiguredTool{DisplayName: "Invoices", BaseTool: models.BasePostgresQuery, Config: models.MustJSON(map[string]string{"query": query})},
		Integration: db.integ,
		Input:       json.RawMessage(input),
	}
}

func (db *customerDB) count(t *testing.T) int {
	t.Helper()
	var n int
	require.NoError(t, db.admin.QueryRow(context.Background(), "SELECT count(*) FROM cust_invoices").Scan(&n))
	return n
}

func newExecutor(t *testing.T, db *customerDB, opts postgres.Options) *postgres.Executor {
	t.Helper()
	if opts.Guard.Allow == nil {
		opts.Guard = guardOf(t)
	}
	ex := postgres.New(db.box, opts)
	t.Cleanup(ex.Close)
	return ex
}

// newUngatedExecutor is newExecutor without the gate's function allow
// list, for the tests of the layers under it.
func newUngatedExecutor(t *testing.T, db *customerDB, opts postgres.Options) *postgres.Executor {
	t.Helper()
	opts.Guard = guardOf(t)
	ex := postgres.NewUngated(db.box, opts)
	t.Cleanup(ex.Close)
	return ex
}

func runTable(t *testing.T, ex *postgres.Executor, c tool.Call) sqlquery.Table {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	res, err := ex.Run(ctx, c)
	require.NoError(t, err)
	require.Zero(t, res.Units, "SQL tools bill nothing")
	var table sqlquery.Table
	require.NoError(t, json.Unmarshal(res.Output, &table))
	return table
}

func TestQueryReturnsRows(t *testing.T) {
	t.Parallel()
	db := newCustomerDB(t)
	ex := newExecutor(t, db, postgres.Options{})
	res, err := ex.Run(context.Background(), db.call(
		"SELECT id, customer, total, issued, paid_at FROM cust_invoices WHERE customer = $1 AND total > $2 ORDER BY id", `{"args":["acme", 50],"task_id":"t-1"}`))
	require.NoError(t, err)
	require.JSONEq(t, `{"columns":["id","customer","total","issued","paid_at"],"rows":[
		[1,"acme",120.50,"2024-01-31","2024-02-03T10:00:00Z"],
		[2,"acme",99.99,"2024-02-29",null]],"row_count":2,"truncated":false}`, string(res.Output))

	// Joins, CTEs and $$;$$ strings run as written.
	table := runTable(t, ex, db.call(`WITH totals AS (SELECT customer, sum(total) AS sum FROM cust_invoices GROUP BY customer)
		SELECT i.id, t.sum, $$;$$ AS semicolon FROM cust_invoices i JOIN totals t USING (customer) WHERE i.id = $1`, `{"args":[3]}`))
	require.Equal(t, []string{"id", "sum", "semicolon"}, table.Columns)
	require.Equal(t, [][]any{{float64(3), float64(5), ";"}}, table.Rows)

	table = runTable(t, ex, db.call("SELECT g FROM generate_series(1, 1500) g", `{}`))
	require.Equal(t, sqlquery.MaxRows, table.RowCount)
	require.True(t, table.Truncated)
}

func TestTransactionIsReadOnlyAndRolledBack(t *testing.T) {
	t.Parallel()
	db := newCustomerDB(t)
	// One connection, so every run lands on the same backend. The gate
	// refuses these queries' functions; what stands under it is tested here.
	ex := newUngatedExecutor(t, db, postgres.Options{MaxConns: 1, StatementTimeout: 7 * time.Second, LockTimeout: 3 * time.Second})

	table := runTable(t, ex, db.call(`SELECT current_setting('transaction_read_only') AS ro,
		current_setting('statement_timeout') AS statement_timeout, current_setting('lock_timeout') AS lock_timeout,
		current_setting('default_transaction_read_only') AS session_ro, current_setting('standard_conforming_strings') AS scs,
		pg_backend_pid() AS pid`, `{}`))
	require.Equal(t, []any{"on", "7s", "3s", "on", "on"}, table.Rows[0][:5])
	pid := table.Rows[0][5]

	// A function the gate cannot see into tries to write: the transaction
	// refuses it, and nothing is written.
	_, err := ex.Run(context.Background(), db.call("SELECT cust_sneaky_write()", `{}`))
	require.True(t, apperr.Is(err, apperr.Forbidden), "%v", err)
	require.ErrorContains(t, err, "read-only transaction")
	require.Equal(t, 3, db.count(t))

	// A function that leaves session state behind: a setting (undone by the
	// rollback) and an advisory lock (which outlives a rollback; DISCARD ALL
	// releases it).
	table = runTable(t, ex, db.call("SELECT cust_leave_traces() AS traced, current_setting('app.trace') AS seen", `{}`))
	require.Equal(t, []any{float64(1), "left behind"}, table.Rows[0], "the function ran")

	table = runTable(t, ex, db.call(`SELECT pg_backend_pid() AS pid, coalesce(current_setting('app.trace', true), '') AS trace,
		(SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND pid = pg_backend_pid()) AS locks,
		current_setting('statement_timeout') AS statement_timeout`, `{}`))
	require.Equal(t, pid, table.Rows[0][0], "the same connection was reused")
	require.Equal(t, []any{"", float64(0), "7s"}, table.Rows[0][1:], "and it was reset")

	var held int
	require.NoError(t, db.admin.QueryRow(context.Background(), "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND objid = 4242").Scan(&held))
	require.Zero(t, held)
}

func TestQueryErrors(t *testing.T) {
	t.Parallel()
	db := newCustomerDB(t)
	ex := newExecutor(t, db, postgres.Options{})
	for _, tc := range []struct {
		name, query, input string
		code               apperr.Code // "" for a tool failure
		want               string
	}{
		{"stored write", "DELETE FROM cust_invoices", `{}`, apperr.Forbidden, "the configured query must be a SELECT or WITH statement, not DELETE"},
		{"stored denied call", "SELECT pg_sleep(1)", `{}`, apperr.Forbidden, "may not call pg_sleep()"},
		// Issue 23 MEDIUM 1 at run time: refused before the database sees it.
		{"stored ts_stat", "SELECT * FROM ts_stat($$SELECT pg_catalog.set_config('statement_timeout', '0', false)::tsvector$$)", `{}`, apperr.Forbidden, "may not call ts_stat()"},
		{"stored function of the customer's", "SELECT cust_leave_traces()", `{}`, apperr.Forbidden, "may not call cust_leave_traces()"},
		{"too few args", "SELECT * FROM cust_invoices WHERE id = $1", `{}`, apperr.Invalid, "takes 1 argument(s) in input.args, got 0"},
		{"too many args", "SELECT 1", `{"args":[1]}`, apperr.Invalid, "takes 0 argument(s)"},
		{"object arg", "SELECT $1::text", `{"args":[{"a":1}]}`, apperr.Invalid, "input.args[0] must be a string, number, boolean or null"},
		{"args not an array", "SELECT $1::text", `{"args":"x"}`, apperr.Invalid, "input.args"},
		{"arg of the wrong type", "SELECT * FROM cust_invoices WHERE id = $1", `{"args":["abc"]}`, apperr.Invalid, "the database refused a value (SQLSTATE 22P02)"},
		{"unknown column", "SELECT nope FROM cust_invoices", `{}`, "", `the query failed on the integration's database (SQLSTATE 42703)`},
		{"unknown table", "SELECT 1 FROM secret_table_name", `{}`, "", `the query failed on the integration's database (SQLSTATE 42P01)`},
		{"division by zero", "SELECT 1 / (id - id) FROM cust_invoices", `{}`, apperr.Invalid, "the database refused a value (SQLSTATE 22012)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, err := ex.Run(context.Background(), db.call(tc.query, tc.input))
			require.Error(t, err)
			if tc.code == "" {
				f, ok := tool.AsFailure(err)
				require.True(t, ok, "%v", err)
				require.Equal(t, tc.want+"; the operator's log has the database's message", f.Message)
				require.Error(t, f.Cause, "the database's own text is kept for the log")
				return
			}
			require.True(t, apperr.Is(err, tc.code), "want %s: %v", tc.code, err)
			_, _, msg := apperr.Public(err)
			require.Contains(t, msg, tc.want)
			// The database's own text (its names and values) is not the
			// bundle's to read.
			for _, text := range []string{"abc", "division", "syntax"} {
				require.NotContains(t, msg, text)
			}
		})
	}
}

func TestTimeouts(t *testing.T) {
	t.Parallel()
	db := newCustomerDB(t)
	slow := "SELECT count(*) FROM generate_series(1, 200000000)"

	ex := newExecutor(t, db, postgres.Options{StatementTimeout: 200 * time.Millisecond})
	_, err := ex.Run(context.Background(), db.call(slow, `{}`))
	require.True(t, apperr.Is(err, apperr.Timeout), "statement timeout: %v", err)
	require.ErrorContains(t, err, "statement timeout")

	// Another session holds the table: the lock timeout ends the wait.
	ex = newExecutor(t, db, postgres.Options{StatementTimeout: 10 * time.Second, LockTimeout: 100 * time.Millisecond})
	ctx := context.Background()
	locker, err := pgx.Connect(ctx, db.dsn)
	require.NoError(t, err)
	defer locker.Close(ctx)
	tx, err := locker.Begin(ctx)
	require.NoError(t, err)
	_, err = tx.Exec(ctx, "LOCK TABLE cust_invoices IN ACCESS EXCLUSIVE MODE")
	require.NoError(t, err)
	_, err = ex.Run(ctx, db.call("SELECT * FROM cust_invoices", `{}`))
	require.True(t, apperr.Is(err, apperr.Timeout), "lock timeout: %v", err)
	require.ErrorContains(t, err, "lock timeout")
	require.NoError(t, tx.Rollback(ctx))

	// The run's deadline stops the query on the server too.
	ex = newExecutor(t, db, postgres.Options{StatementTimeout: time.Minute})
	runCtx, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, err = ex.Run(runCtx, db.call(slow+" AS deadline_marker", `{}`))
	require.True(t, apperr.Is(err, apperr.Timeout), "deadline: %v", err)
	require.Less(t, time.Since(start), 5*time.Second)
	require.Eventually(t, func() bool {
		var n int
		err := db.admin.QueryRow(ctx, "SELECT count(*) FROM pg_stat_activity WHERE query LIKE '%deadline_marker%' AND state = 'active' AND pid <> pg_backend_pid()").Scan(&n)
		return err == nil && n == 0
	}, 5*time.Second, 20*time.Millisecond, "the server is no longer running the query")
}

// TestConnectionsGoThroughTheGuard: the tool connects through the data
// sources' guard (DATASOURCE_ALLOW_CIDRS, never the platform's server),
// and every failure to connect is the one answer a data source gives.
func TestConnectionsGoThroughTheGuard(t *testing.T) {
	t.Parallel()
	db := newCustomerDB(t)
	guard := guardOf(t)
	connectFailed := func(t *testing.T, ex *postgres.Executor, dsn string) error {
		t.Helper()
		c := db.call("SELECT scope, token_hash FROM api_tokens", `{}`)
		c.Integration = db.integration(t, dsn)
		_, err := ex.Run(context.Background(), c)
		require.True(t, apperr.Is(err, apperr.BadGateway), "%v", err)
		_, _, msg := apperr.Public(err)
		require.Equal(t, "the data source connection failed; the operator's log has the reason", msg)
		return err
	}

	// Loopback not allowed: refused at the dial, answered like any failure.
	ex := postgres.New(db.box, postgres.Options{Guard: datasource.Guard{Platform: guard.Platform}})
	t.Cleanup(ex.Close)
	err := connectFailed(t, ex, db.dsn)
	require.True(t, gateway.IsBlocked(err), "%v", err)

	allowed := newExecutor(t, db, postgres.Options{})
	// The platform's own database, even with its address allowed: every
	// workspace's tokens are there.
	err = connectFailed(t, allowed, testkit.DatabaseURL())
	require.ErrorIs(t, err, datasource.ErrPlatformServer)
	// Nothing listening, and a server that refuses the login: the same answer.
	connectFailed(t, allowed, "postgres://u:p@127.0.0.1:1/db")
	u, err := url.Parse(db.dsn)
	require.NoError(t, err)
	u.User = url.UserPassword("no_such_role", "wrong")
	connectFailed(t, allowed, u.String())

	// A unix socket is no way around it, nor a host list.
	c := db.call("SELECT 1", `{}`)
	for _, dsn := range []string{"host=/var/run/postgresql user=postgres dbname=test",
		"postgres://postgres@%2Fvar%2Frun%2Fpostgresql/test", "postgres://postgres@127.0.0.1,127.0.0.2/test"} {
		c.Integration = db.integration(t, dsn)
		_, err = allowed.Run(context.Background(), c)
		require.True(t, apperr.Is(err, apperr.BadGateway), "%s: %v", dsn, err)
	}

	// A DSN that does not parse is reported without quoting it.
	c.Integration = db.integration(t, "postgres://u:s3cret@127.0.0.1:5432/db?sslmode=bogus")
	_, err = allowed.Run(context.Background(), c)
	require.True(t, apperr.Is(err, apperr.BadGateway), "%v", err)
	require.NotContains(t, err.Error(), "s3cret")

	c.Integration = &models.Integration{ID: models.NewID(), Name: "mirror", Kind: "mssql"}
	_, err = allowed.Run(context.Background(), c)
	require.True(t, apperr.Is(err, apperr.Invalid), "%v", err)
}

func TestRotatedSecretsOpenANewPool(t *testing.T) {
	t.Parallel()
	db := newCustomerDB(t)
	ex := newUngatedExecutor(t, db, postgres.Options{}) // current_schema() is no report function
	table := runTable(t, ex, db.call("SELECT current_schema()", `{}`))
	u, err := url.Parse(db.dsn)
	require.NoError(t, err)
	first := u.Query().Get("search_path")
	require.Equal(t, first, table.Rows[0][0])

	q := u.Query()
	q.Set("search_path", "pg_catalog")
	u.RawQuery = q.Encode()
	rotated := db.integration(t, u.String())
	rotated.ID = db.integ.ID
	c := db.call("SELECT current_schema()", `{}`)
	c.Integration = rotated
	table = runTable(t, ex, c)
	require.Equal(t, "pg_catalog", table.Rows[0][0])
	require.False(t, strings.EqualFold(first, "pg_catalog"))
}
