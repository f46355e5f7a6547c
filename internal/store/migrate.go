package store

import (
	"context"
	"embed"
	"fmt"
	"io/fs"
	"path"
	"sort"
	"strconv"
	"strings"
	"time"

	"gorm.io/gorm"

	"github.com/appruntime/appruntime/internal/apperr"
	"github.com/appruntime/appruntime/internal/config"
)

//go:embed migrations
var migrationFS embed.FS

// Migration is one versioned schema change.
type Migration struct {
	Version int
	Name    string
	SQL     string
}

// Migrations returns the dialect's migrations in version order. File names
// are NNNN_name.sql; both dialects must carry the same versions.
func Migrations(d config.Dialect) ([]Migration, error) {
	dir := path.Join("migrations", string(d))
	entries, err := fs.ReadDir(migrationFS, dir)
	if err != nil {
		return nil, fmt.Errorf("store: read migrations: %w", err)
	}
	var out []Migration
	for _, e := range entries {
		num, name, ok := strings.Cut(strings.TrimSuffix(e.Name(), ".sql"), "_")
		v, err := strconv.Atoi(num)
		if !ok || err != nil {
			return nil, fmt.Errorf("store: migration file %s is not NNNN_name.sql", e.Name())
		}
		body, err := fs.ReadFile(migrationFS, path.Join(dir, e.Name()))
		if err != nil {
			return nil, err
		}
		out = append(out, Migration{Version: v, Name: name, SQL: string(body)})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Version < out[j].Version })
	return out, nil
}

const createMigrationsTable = `CREATE TABLE IF NOT EXISTS schema_migrations (
    version    integer PRIMARY KEY,
    name       text NOT NULL,
    applied_at timestamp NOT NULL
)`

// migrationLockID serialises concurrent `appruntime migrate` runs on Postgres.
const migrationLockID = 7216400316

// Migrate applies every migration not yet applied, each in its own
// transaction, and returns the versions it applied.
func (s *Store) Migrate(ctx context.Context) ([]int, error) {
	all, err := Migrations(s.Dialect)
	if err != nil {
		return nil, err
	}
	db := s.DB.WithContext(ctx)
	if err := db.Exec(createMigrationsTable).Error; err != nil {
		return nil, fmt.Errorf("store: create schema_migrations: %w", err)
	}
	var applied []int
	for _, m := range all {
		err := s.migrationTx(db, func(tx *gorm.DB) error {
			if s.Dialect == config.Postgres {
				if err := tx.Exec("SELECT pg_advisory_xact_lock(?)", migrationLockID).Error; err != nil {
					return err
				}
			}
			var n int64
			if err := tx.Raw("SELECT count(*) FROM schema_migrations WHERE version = ?", m.Version).Scan(&n).Error; err != nil {
				return err
			}
			if n > 0 {
				return nil
			}
			if err := execScript(tx, s.Dialect, m.SQL); err != nil {
				return err
			}
			applied = append(applied, m.Version)
			return tx.Exec("INSERT INTO schema_migrations (version, name, applied_at) VALUES (?, ?, ?)",
				m.Version, m.Name, time.Now().UTC()).Error
		})
		if err != nil {
			return applied, fmt.Errorf("store: migration %04d_%s: %w", m.Version, m.Name, err)
		}
	}
	return applied, nil
}

// migrationTx runs fn in a transaction. On SQLite it follows SQLite's
// procedure for schema changes that rebuild a table: on one connection,
// foreign keys off (a table dropped to be rebuilt would otherwise take its
// children's rows with it, ON DELETE CASCADE), fn, then a foreign key check
// before the commit, foreign keys on again.
func (s *Store) migrationTx(db *gorm.DB, fn func(tx *gorm.DB) error) error {
	if s.Dialect != config.SQLite {
		return db.Transaction(fn)
	}
	return db.Connection(func(conn *gorm.DB) error {
		if err := conn.Exec("PRAGMA foreign_keys = OFF").Error; err != nil {
			return err
		}
		defer conn.Exec("PRAGMA foreign_keys = ON")
		return conn.Transaction(func(tx *gorm.DB) error {
			if err := fn(tx); err != nil {
				return err
			}
			var violations []map[string]any
			if err := tx.Raw("PRAGMA foreign_key_check").Scan(&violations).Error; err != nil {
				return err
			}
			if len(violations) > 0 {
				return fmt.Errorf("the migration leaves %d rows whose foreign keys point nowhere: %v", len(violations), violations)
			}
			return nil
		})
	})
}

// execScript runs a migration file. Postgres takes it whole; the SQLite driver
// runs one statement per Exec, so the file is split on statement ends.
func execScript(tx *gorm.DB, d config.Dialect, script string) error {
	if d == config.Postgres {
		return tx.Exec(script).Error
	}
	for _, stmt := range strings.Split(stripComments(script), ";") {
		if strings.TrimSpace(stmt) == "" {
			continue
		}
		if err := tx.Exec(stmt).Error; err != nil {
			return fmt.Errorf("%w\n%s", err, strings.TrimSpace(stmt))
		}
	}
	return nil
}

func stripComments(script string) string {
	var b strings.Builder
	for _, line := range strings.Split(script, "\n") {
		if strings.HasPrefix(strings.TrimSpace(line), "--") {
			continue
		}
		b.WriteString(line)
		b.WriteByte('\n')
	}
	return b.String()
}

// SchemaVersion returns the newest applied migration (0 when none).
func (s *Store) SchemaVersion(ctx context.Context) (int, error) {
	var exists int64
	var q string
	if s.Dialect == config.Postgres {
		q = "SELECT count(*) FROM information_schema.tables WHERE table_schema = current_schema() AND table_name = 'schema_migrations'"
	} else {
		q = "SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = 'schema_migrations'"
	}
	if err := s.DB.WithContext(ctx).Raw(q).Scan(&exists).Error; err != nil {
		return 0, fmt.Errorf("store: schema version: %w", err)
	}
	if exists == 0 {
		return 0, nil
	}
	var v *int
	if err := s.DB.WithContext(ctx).Raw("SELECT max(version) FROM schema_migrations").Scan(&v).Error; err != nil {
		return 0, fmt.Errorf("store: schema version: %w", err)
	}
	if v == nil {
		return 0, nil
	}
	return *v, nil
}

// CheckMigrated returns a not_migrated error, telling the operator to run
// `appruntime migrate`, when the database is behind this binary.
func (s *Store) CheckMigrated(ctx context.Context) error {
	all, err := Migrations(s.Dialect)
	if err != nil {
		return err
	}
	want := all[len(all)-1].Version
	have, err := s.SchemaVersion(ctx)
	if err != nil {
		return err
	}
	if have < want {
		return apperr.New(apperr.NotMigrated,
			"the database is not migrated (schema version %d, this binary needs %d): run `appruntime migrate` first", have, want)
	}
	return nil
}
