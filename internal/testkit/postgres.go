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

// URLOf returns the DATABASE_URL of a store made by Schema, so that another
// pool (a data source, a child process) can open the same schema.
func URLOf(st *store.Store) string { return urlWithSchema(DatabaseURL(), schemaOf(st)) }

var schemaNames sync.Map // *store.Store → schema name

func schemaOf(st *store.Store) string {
	v, _ := schemaNames.Load(st)
	return v.(string)
}

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
	schemaNames.Store(st, name)
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
