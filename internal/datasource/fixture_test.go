package datasource_test

import (
	"context"
	"database/sql"
	"path/filepath"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/appruntime/appruntime/internal/crypt"
	"github.com/appruntime/appruntime/internal/datasource"
	"github.com/appruntime/appruntime/internal/testkit"
	"github.com/appruntime/appruntime/models"
)

// fixture is a data source with the inventory tables, and a way to run SQL
// on it behind the Source's back.
type fixture struct {
	kind string
	dsn  string
	src  datasource.Source
	exec func(t *testing.T, sql string, args ...any)
	// count returns the rows of table matching where (SQL of the test's own).
	count func(t *testing.T, table, where string, args ...any) int
}

var postgresDDL = []string{
	`CREATE TABLE inventory (
		id integer PRIMARY KEY,
		name text NOT NULL UNIQUE,
		qty integer,
		price numeric(10,2),
		tag text,
		CONSTRAINT qty_not_negative CHECK (qty >= 0))`,
	`CREATE TABLE inventory_notes (id serial PRIMARY KEY, item_id integer NOT NULL, body text NOT NULL, meta jsonb)`,
	`CREATE TABLE labels (name text PRIMARY KEY)`,
}

var sqliteDDL = []string{
	`CREATE TABLE inventory (
		id INTEGER PRIMARY KEY,
		name TEXT NOT NULL UNIQUE,
		qty INTEGER CHECK (qty >= 0),
		price REAL,
		tag TEXT)`,
	`CREATE TABLE inventory_notes (id INTEGER PRIMARY KEY AUTOINCREMENT, item_id INTEGER NOT NULL, body TEXT NOT NULL, meta TEXT)`,
	`CREATE TABLE labels (name TEXT PRIMARY KEY)`,
}

// seedRows are the inventory; row 5's name would end the statement if it
// were ever spliced into SQL text.
var seedRows = []string{
	`INSERT INTO inventory (id, name, qty, price, tag) VALUES (1, 'apple', 5, 1.25, 'fruit')`,
	`INSERT INTO inventory (id, name, qty, price, tag) VALUES (2, 'banana', 0, 0.50, 'fruit')`,
	`INSERT INTO inventory (id, name, qty, price, tag) VALUES (3, 'carrot', 12, 0.80, 'veg')`,
	`INSERT INTO inventory (id, name, qty, price, tag) VALUES (4, 'dill', NULL, 2.00, NULL)`,
	`INSERT INTO inventory (id, name, qty, price, tag) VALUES (5, 'Robert''); DROP TABLE inventory;--', 1, 9.99, 'odd')`,
}

func box(t testing.TB) *crypt.Box {
	t.Helper()
	b, err := crypt.New(testkit.TestKey)
	require.NoError(t, err)
	return b
}

// integration returns an integration of kind whose sealed DSN is dsn.
func integration(t testing.TB, kind, dsn string) models.Integration {
	t.Helper()
	sealed, err := box(t).SealJSON(datasource.Secrets{DSN: dsn})
	require.NoError(t, err)
	return models.Integration{ID: models.NewID(), WorkspaceID: models.NewID(), Name: "inventory db", Kind: kind,
		SecretsEnc: sealed, UpdatedAt: time.Now()}
}

// newRegistry returns a registry whose sources may reach the tests' Postgres
// on loopback (never by default).
func newRegistry(t testing.TB) *datasource.Registry {
	t.Helper()
	reg := datasource.NewRegistry(box(t), datasource.Options{Allow: testkit.Loopback})
	t.Cleanup(reg.Close)
	return reg
}

// postgresFixture makes the inventory tables in a schema of the test's own
// in the data-source database.
func postgresFixture(t *testing.T) fixture {
	t.Helper()
	url := testkit.DataSourceURL(t)
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, url)
	require.NoError(t, err)
	t.Cleanup(func() { _ = conn.Close(context.Background()) })
	exec := func(t *testing.T, sql string, args ...any) {
		t.Helper()
		_, err := conn.Exec(ctx, sql, args...)
		require.NoError(t, err, sql)
	}
	for _, s := range append(postgresDDL, seedRows...) {
		exec(t, s)
	}
	src, err := newRegistry(t).Source(ctx, integration(t, datasource.KindPostgres, url))
	require.NoError(t, err)
	return fixture{kind: datasource.KindPostgres, dsn: url, src: src, exec: exec,
		count: func(t *testing.T, table, where string, args ...any) int {
			t.Helper()
			var n int
			require.NoError(t, conn.QueryRow(ctx, "SELECT count(*) FROM "+table+" WHERE "+where, args...).Scan(&n))
			return n
		}}
}

// sqliteFixture makes the inventory tables in a SQLite file.
func sqliteFixture(t *testing.T) fixture {
	t.Helper()
	path := filepath.Join(t.TempDir(), "inventory.db")
	db, err := sql.Open("sqlite", path)
	require.NoError(t, err)
	t.Cleanup(func() { _ = db.Close() })
	exec := func(t *testing.T, sql string, args ...any) {
		t.Helper()
		_, err := db.Exec(sql, args...)
		require.NoError(t, err, sql)
	}
	for _, s := range append(sqliteDDL, seedRows...) {
		exec(t, s)
	}
	reg := newRegistry(t)
	require.NoError(t, reg.EnableSQLite(path))
	src, err := reg.Source(context.Background(), integration(t, datasource.KindSQLite, path))
	require.NoError(t, err)
	return fixture{kind: datasource.KindSQLite, dsn: path, src: src, exec: exec,
		count: func(t *testing.T, table, where string, args ...any) int {
			t.Helper()
			var n int
			require.NoError(t, db.QueryRow("SELECT count(*) FROM "+table+" WHERE "+where, args...).Scan(&n))
			return n
		}}
}

// forEachSource runs fn as a parallel subtest on a Postgres and a SQLite
// fixture of its own.
func forEachSource(t *testing.T, fn func(t *testing.T, f fixture)) {
	t.Helper()
	for name, make := range map[string]func(*testing.T) fixture{"postgres": postgresFixture, "sqlite": sqliteFixture} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			fn(t, make(t))
		})
	}
}

// ids selects the ids of the inventory rows q matches, in order.
func ids(t *testing.T, src datasource.Source, q datasource.SelectQuery) []int64 {
	t.Helper()
	page, err := src.Select(context.Background(), q)
	require.NoError(t, err)
	out := []int64{}
	for _, row := range page.Rows {
		out = append(out, toInt(t, row[0]))
	}
	return out
}

func toInt(t *testing.T, v any) int64 {
	t.Helper()
	switch x := v.(type) {
	case int64:
		return x
	case int32:
		return int64(x)
	case int16:
		return int64(x)
	}
	t.Fatalf("id %v is %T, not an integer", v, v)
	return 0
}
