package testkit

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"sync"
	"testing"
	"time"

	"gorm.io/gorm"

	"github.com/appruntime/appruntime/internal/config"
	"github.com/appruntime/appruntime/internal/store"
)

// DefaultDatabaseURL is used when TEST_DATABASE_URL is unset.
const DefaultDatabaseURL = "postgres://postgres@127.0.0.1:5432/test?sslmode=disable"

// DatabaseURL returns the test Postgres URL.
func DatabaseURL() string {
	if v := os.Getenv("TEST_DATABASE_URL"); v != "" {
		return v
	}
	return DefaultDatabaseURL
}

var (
	adminOnce  sync.Once
	adminStore *store.Store
	adminErr   error

	sharedOnce  sync.Once
	sharedStore *store.Store
	sharedErr   error
)

// needServer skips under -short and otherwise does nothing: a missing server
// then fails the test where it is first used.
func needServer(t testing.TB, what string) {
	t.Helper()
	if testing.Short() {
		t.Skipf("needs %s (skipped with -short)", what)
	}
}

func admin(t testing.TB) *store.Store {
	t.Helper()
	adminOnce.Do(func() {
		adminStore, adminErr = store.Open(context.Background(), DatabaseURL(), store.Options{MaxOpenConns: 4})
		if adminErr == nil {
			sweepSchemas(adminStore.DB)
		}
	})
	if adminErr != nil {
		t.Fatalf("testkit: Postgres at TEST_DATABASE_URL (%s) is needed: %v (run scripts/services.sh)", DatabaseURL(), adminErr)
	}
	return adminStore
}

// Tx returns a Store whose handle is a transaction on this test binary's
// migrated schema; it is rolled back when the test ends. Nested transactions
// of the code under test become savepoints.
func Tx(t testing.TB) *store.Store {
	t.Helper()
	needServer(t, "Postgres")
	sharedOnce.Do(func() {
		sharedStore, sharedErr = newSchemaStore(admin(t), 8)
	})
	if sharedErr != nil {
		t.Fatalf("testkit: %v", sharedErr)
	}
	tx := sharedStore.DB.Begin()
	if tx.Error != nil {
		t.Fatalf("testkit: begin: %v", tx.Error)
	}
	t.Cleanup(func() { tx.Rollback() })
	return store.Wrap(tx, config.Postgres)
}

// Schema returns a Store on a migrated schema of the test's own, dropped at
// cleanup. Its pool is real, so goroutines see each other's commits.
func Schema(t testing.TB) *store.Store {
	t.Helper()
	needServer(t, "Postgres")
	st, err := newSchemaStore(admin(t), 8)
	if err != nil {
		t.Fatalf("testkit: %v", err)
	}
	t.Cleanup(func() {
		name := schemaOf(st)
		_ = st.Close()
		admin(t).DB.Exec("DROP SCHEMA IF EXISTS " + name + " CASCADE")
	})
	return st
}

// SchemaURL returns the DATABASE_URL of a fresh migrated schema of the test's
// own (for tests that start a whole process on it), dropped at cleanup.
func SchemaURL(t testing.TB) string {
	t.Helper()
	st := Schema(t)
	return urlWithSchema(DatabaseURL(), schemaOf(st))
}

// URLOf returns the URL of a store made by Schema or DataSource, so that
// another pool (a data source, a child process) can open the same schema.
func URLOf(st *store.Store) string {
	v, _ := schemaNames.Load(st)
	return v.(schemaInfo).url
}

// schemaInfo is where a store made here lives.
type schemaInfo struct {
	name string // the schema
	url  string // its URL (search_path set)
}

var schemaNames sync.Map // *store.Store → schemaInfo

func schemaOf(st *store.Store) string {
	v, _ := schemaNames.Load(st)
	return v.(schemaInfo).name
}

// DefaultDataSourceURL is used when TEST_DATASOURCE_URL is unset: the
// tests' data-source database on a Postgres server of its own (the second
// cluster scripts/services.sh starts), reached as a role that is not a
// superuser. A data source is never on the platform's server (the registry
// refuses it, whatever the database), as a customer's database is not.
const DefaultDataSourceURL = "postgres://appruntime_datasource@127.0.0.1:5433/test_datasource?sslmode=disable"

var (
	dataSourceOnce  sync.Once
	dataSourceOwner *store.Store
	dataSourceErr   error
)

// DataSourceDatabaseURL returns the URL of the tests' data-source database
// (TEST_DATASOURCE_URL), as its owner, the role DataSourceRole names.
func DataSourceDatabaseURL() string {
	if v := os.Getenv("TEST_DATASOURCE_URL"); v != "" {
		return v
	}
	return DefaultDataSourceURL
}

// DataSourceAdminURL returns the URL of the data sources' server as its
// superuser postgres (trust on loopback, as scripts/services.sh sets it up),
// for tests that make roles there.
func DataSourceAdminURL() string {
	u, err := url.Parse(DataSourceDatabaseURL())
	if err != nil {
		panic(err)
	}
	u.User = url.User("postgres")
	return u.String()
}

// DataSourceRole returns the role the tests' data sources connect as.
func DataSourceRole() string {
	u, err := url.Parse(DataSourceDatabaseURL())
	if err != nil {
		panic(err)
	}
	return u.User.Username()
}

// DataSource returns a Store on an empty schema of the test's own in the
// data-source database, dropped at cleanup. Its pool is real; URLOf gives
// the DSN an integration uses to reach it.
func DataSource(t testing.TB) *store.Store {
	t.Helper()
	needServer(t, "Postgres")
	dataSourceOnce.Do(func() {
		dataSourceOwner, dataSourceErr = store.Open(context.Background(), DataSourceDatabaseURL(), store.Options{MaxOpenConns: 4})
		if dataSourceErr == nil {
			sweepSchemas(dataSourceOwner.DB)
		}
	})
	if dataSourceErr != nil {
		t.Fatalf("testkit: the data-source database at TEST_DATASOURCE_URL (%s) is needed: %v (run scripts/services.sh)", DataSourceDatabaseURL(), dataSourceErr)
	}
	name := fmt.Sprintf("tk_%d_%s", time.Now().Unix(), randomHex(4))
	if err := dataSourceOwner.DB.Exec("CREATE SCHEMA " + name).Error; err != nil {
		t.Fatalf("testkit: create schema: %v", err)
	}
	dsn := urlWithSchema(DataSourceDatabaseURL(), name)
	st, err := store.Open(context.Background(), dsn, store.Options{MaxOpenConns: 4})
	if err != nil {
		t.Fatalf("testkit: %v", err)
	}
	schemaNames.Store(st, schemaInfo{name: name, url: dsn})
	t.Cleanup(func() {
		_ = st.Close()
		dataSourceOwner.DB.Exec("DROP SCHEMA IF EXISTS " + name + " CASCADE")
	})
	return st
}

// DataSourceURL returns the DSN of a fresh DataSource schema.
func DataSourceURL(t testing.TB) string { return URLOf(DataSource(t)) }

// newSchemaStore creates schema tk_<unix>_<random>, migrates it, and opens a
// pool whose search_path is that schema.
func newSchemaStore(admin *store.Store, conns int) (*store.Store, error) {
	name := fmt.Sprintf("tk_%d_%s", time.Now().Unix(), randomHex(4))
	if err := admin.DB.Exec("CREATE SCHEMA " + name).Error; err != nil {
		return nil, fmt.Errorf("create schema: %w", err)
	}
	st, err := store.Open(context.Background(), urlWithSchema(DatabaseURL(), name), store.Options{MaxOpenConns: conns})
	if err != nil {
		return nil, err
	}
	if _, err := st.Migrate(context.Background()); err != nil {
		return nil, fmt.Errorf("migrate schema %s: %w", name, err)
	}
	schemaNames.Store(st, schemaInfo{name: name, url: urlWithSchema(DatabaseURL(), name)})
	return st, nil
}

func urlWithSchema(raw, schema string) string {
	u, err := url.Parse(raw)
	if err != nil {
		panic(err)
	}
	q := u.Query()
	q.Set("search_path", schema)
	u.RawQuery = q.Encode()
	return u.String()
}

var schemaName = regexp.MustCompile(`^tk_(\d+)_[0-9a-f]+$`)

// sweepSchemas drops test schemas left behind by runs that died more than
// three hours ago (a killed test binary runs no cleanup).
func sweepSchemas(db *gorm.DB) {
	var names []string
	db.Raw("SELECT schema_name FROM information_schema.schemata WHERE schema_name LIKE 'tk\\_%'").Scan(&names)
	for _, n := range names {
		m := schemaName.FindStringSubmatch(n)
		if m == nil {
			continue
		}
		ts, _ := strconv.ParseInt(m[1], 10, 64)
		if time.Since(time.Unix(ts, 0)) > 3*time.Hour {
			db.Exec("DROP SCHEMA IF EXISTS " + n + " CASCADE")
		}
	}
}

// SQLite returns a migrated SQLite store in the test's temp directory.
func SQLite(t testing.TB) *store.Store {
	t.Helper()
	path := filepath.Join(t.TempDir(), "platform.db")
	st, err := store.Open(context.Background(), "sqlite:"+path, store.Options{})
	if err != nil {
		t.Fatalf("testkit: open sqlite: %v", err)
	}
	if _, err := st.Migrate(context.Background()); err != nil {
		t.Fatalf("testkit: migrate sqlite: %v", err)
	}
	t.Cleanup(func() { _ = st.Close() })
	return st
}

func randomHex(n int) string {
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		panic(err)
	}
	return hex.EncodeToString(b)
}

// EachDialect runs fn, in parallel subtests named after the dialects, on a
// fresh Postgres schema (Schema) and on the SQLite of the dev mode.
func EachDialect(t *testing.T, fn func(t *testing.T, st *store.Store)) {
	t.Helper()
	for name, open := range map[string]func(testing.TB) *store.Store{"postgres": Schema, "sqlite": SQLite} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			fn(t, open(t))
		})
	}
}
