package store

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/glebarez/sqlite"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/stdlib"
	"gorm.io/driver/postgres"
	"gorm.io/gorm"
	"gorm.io/gorm/logger"

	"github.com/appruntime/appruntime/internal/apperr"
	"github.com/appruntime/appruntime/internal/config"
)

// Store is the platform database.
type Store struct {
	DB      *gorm.DB
	Dialect config.Dialect
	sql     *sql.DB
	counter *statementCounter // Postgres only
}

// Options tune a Store's connection pool.
type Options struct {
	MaxOpenConns int // 0: 20 for Postgres
}

// Open connects to the database named by databaseURL (see config.ParseDatabaseURL)
// and checks that it answers. It does not migrate.
func Open(ctx context.Context, databaseURL string, opts Options) (*Store, error) {
	dialect, dsn, err := config.ParseDatabaseURL(databaseURL)
	if err != nil {
		return nil, &config.Error{Var: "DATABASE_URL", Reason: err.Error()}
	}
	gcfg := &gorm.Config{
		Logger:                                   logger.Discard,
		NowFunc:                                  func() time.Time { return time.Now().UTC() },
		DisableForeignKeyConstraintWhenMigrating: true,
		TranslateError:                           true,
		// A single Create or Update is one statement, atomic by itself; gorm's
		// default BEGIN/COMMIT around it costs two extra round trips. Work of
		// several statements uses Store.Tx explicitly.
		SkipDefaultTransaction: true,
	}
	var db *gorm.DB
	var counter *statementCounter
	switch dialect {
	case config.Postgres:
		counter = &statementCounter{}
		db, err = gorm.Open(postgres.New(postgres.Config{DSN: dsn, OptionOpenDB: []stdlib.OptionOpenDB{
			stdlib.OptionBeforeConnect(func(_ context.Context, c *pgx.ConnConfig) error { c.Tracer = counter; return nil }),
		}}), gcfg)
	case config.SQLite:
		if dir := filepath.Dir(dsn); dir != "." {
			if err := os.MkdirAll(dir, 0o755); err != nil {
				return nil, fmt.Errorf("store: create %s: %w", dir, err)
			}
		}
		db, err = gorm.Open(sqlite.Open(sqliteDSN(dsn)), gcfg)
	}
	if err != nil {
		// gorm.Open already connects (and pings) the database, so a server
		// that is down or refuses the credentials fails here, not at Ping.
		return nil, &config.Error{Var: "DATABASE_URL", Reason: fmt.Sprintf("cannot open the %s database: %v", dialect, err)}
	}
	sqlDB, err := db.DB()
	if err != nil {
		return nil, fmt.Errorf("store: %w", err)
	}
	switch dialect {
	case config.Postgres:
		n := opts.MaxOpenConns
		if n <= 0 {
			n = 20
		}
		sqlDB.SetMaxOpenConns(n)
		sqlDB.SetMaxIdleConns(n)
		sqlDB.SetConnMaxIdleTime(5 * time.Minute)
	case config.SQLite:
		// One writer at a time is SQLite's rule; a small pool keeps readers
		// concurrent under WAL while busy_timeout queues the writers.
		sqlDB.SetMaxOpenConns(4)
	}
	s := &Store{DB: db, Dialect: dialect, sql: sqlDB, counter: counter}
	pingCtx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	if err := s.Ping(pingCtx); err != nil {
		_ = sqlDB.Close()
		return nil, &config.Error{Var: "DATABASE_URL", Reason: fmt.Sprintf("cannot reach the %s database: %v", dialect, err)}
	}
	return s, nil
}

// sqliteDSN adds the pragmas the platform relies on: foreign keys, WAL so
// readers do not block the writer, a busy timeout instead of SQLITE_BUSY, and
// immediate transactions so two writers queue rather than deadlock.
func sqliteDSN(path string) string {
	sep := "?"
	if strings.Contains(path, "?") {
		sep = "&"
	}
	return path + sep + "_pragma=foreign_keys(1)&_pragma=journal_mode(WAL)&_pragma=busy_timeout(10000)&_pragma=synchronous(NORMAL)&_txlock=immediate"
}

// Ping checks that the database answers.
func (s *Store) Ping(ctx context.Context) error {
	if s.sql == nil {
		return s.DB.WithContext(ctx).Exec("SELECT 1").Error
	}
	return s.sql.PingContext(ctx)
}

// SQL returns the underlying pool, for the few callers that need database/sql.
func (s *Store) SQL() *sql.DB { return s.sql }

// DiscardConn closes conn for good instead of returning it to the pool:
// for a connection whose session state (a setting, an advisory lock) must
// not reach the pool's other users.
func DiscardConn(conn *sql.Conn) {
	_ = conn.Raw(func(any) error { return driver.ErrBadConn })
	_ = conn.Close()
}

// Close releases the pool (a no-op on a wrapped handle).
func (s *Store) Close() error {
	if s.sql == nil {
		return nil
	}
	return s.sql.Close()
}

// Tx runs fn in a transaction, committing when fn returns nil.
func (s *Store) Tx(ctx context.Context, fn func(tx *gorm.DB) error) error {
	return s.DB.WithContext(ctx).Transaction(fn)
}

// TxRetrying is Tx run again, on another connection, while it fails because
// the database could not be reached or closed the connection under it
// (apperr.Disconnected: a restart), for up to d; then, or on any other
// error, it returns the last error. For what must be recorded once
// something outside the database already happened (a data source's
// commit, a tool's answer): fn runs again from the start, so when a
// commit's answer may have been lost it first checks whether the earlier
// attempt committed.
func (s *Store) TxRetrying(ctx context.Context, d time.Duration, fn func(tx *gorm.DB) error) error {
	until := time.Now().Add(d)
	for wait := 50 * time.Millisecond; ; wait = min(2*wait, time.Second) {
		err := s.Tx(ctx, fn)
		if err == nil || !apperr.Disconnected(err) || time.Now().Add(wait).After(until) {
			return err
		}
		select {
		case <-ctx.Done():
			return err
		case <-time.After(wait):
		}
	}
}

// NotFound turns gorm's record-not-found into an apperr not_found naming what,
// and wraps every other error with op. Use it on the result of First/Take.
func NotFound(err error, op, what string) error {
	if err == nil {
		return nil
	}
	if errors.Is(err, gorm.ErrRecordNotFound) {
		return apperr.NotFoundf("%s not found", what)
	}
	return fmt.Errorf("%s: %w", op, err)
}

// IsUniqueViolation reports whether err is a unique-constraint violation.
func IsUniqueViolation(err error) bool {
	return errors.Is(err, gorm.ErrDuplicatedKey) ||
		strings.Contains(err.Error(), "UNIQUE constraint failed") ||
		strings.Contains(err.Error(), "SQLSTATE 23505")
}

// Wrap returns a Store over an existing gorm handle, such as a transaction a
// test rolls back. Ping and Close are not available on it.
func Wrap(db *gorm.DB, d config.Dialect) *Store { return &Store{DB: db, Dialect: d} }
