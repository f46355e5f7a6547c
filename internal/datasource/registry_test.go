package datasource_test

import (
	"context"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/appruntime/appruntime/internal/apperr"
	"github.com/appruntime/appruntime/internal/datasource"
	"github.com/appruntime/appruntime/internal/testkit"
	"github.com/appruntime/appruntime/models"
)

// labelledSchema returns the DSN of a schema of the test's own holding one
// row that says label.
func labelledSchema(t *testing.T, label string) string {
	t.Helper()
	url := testkit.DataSourceURL(t)
	conn, err := pgx.Connect(context.Background(), url)
	require.NoError(t, err)
	defer conn.Close(context.Background())
	_, err = conn.Exec(context.Background(), `CREATE TABLE origin (label text)`)
	require.NoError(t, err)
	_, err = conn.Exec(context.Background(), `INSERT INTO origin VALUES ($1)`, label)
	require.NoError(t, err)
	return url
}

func originOf(t *testing.T, src datasource.Source) any {
	t.Helper()
	page, err := src.Select(context.Background(), datasource.SelectQuery{Table: "origin", Columns: []string{"label"}})
	require.NoError(t, err)
	require.Len(t, page.Rows, 1)
	return page.Rows[0][0]
}

func reseal(t *testing.T, integ models.Integration, dsn string, at time.Time) models.Integration {
	t.Helper()
	sealed, err := box(t).SealJSON(datasource.Secrets{DSN: dsn})
	require.NoError(t, err)
	integ.SecretsEnc = sealed
	integ.UpdatedAt = at
	return integ
}

func TestRegistryReopensOnDSNChange(t *testing.T) {
	t.Parallel()
	dsnA, dsnB := labelledSchema(t, "A"), labelledSchema(t, "B")
	reg := newRegistry(t)
	ctx := context.Background()

	integ := integration(t, datasource.KindPostgres, dsnA)
	first, err := reg.Source(ctx, integ)
	require.NoError(t, err)
	require.Equal(t, "A", originOf(t, first))
	again, err := reg.Source(ctx, integ)
	require.NoError(t, err)
	require.Same(t, first, again, "one pool per integration")

	resealedSame := reseal(t, integ, dsnA, integ.UpdatedAt.Add(time.Second))
	same, err := reg.Source(ctx, resealedSame)
	require.NoError(t, err)
	require.Same(t, first, same, "a re-sealed but unchanged DSN keeps the pool")

	rotated := reseal(t, integ, dsnB, integ.UpdatedAt.Add(2*time.Second))
	second, err := reg.Source(ctx, rotated)
	require.NoError(t, err)
	require.NotSame(t, first, second, "a rotated DSN opens a new pool")
	require.Equal(t, "B", originOf(t, second))

	stale, err := reg.Source(ctx, integ)
	require.NoError(t, err)
	require.Same(t, second, stale, "a copy of the integration from before the rotation gets the current pool")

	require.Eventually(t, func() bool {
		_, err := first.Select(ctx, datasource.SelectQuery{Table: "origin", Columns: []string{"label"}})
		return apperr.CodeOf(err) == apperr.Unavailable
	}, 5*time.Second, 20*time.Millisecond, "the old pool is closed and says retry")
}

func TestRegistryConcurrentFirstUse(t *testing.T) {
	t.Parallel()
	dsn := labelledSchema(t, "C")
	reg := newRegistry(t)
	integ := integration(t, datasource.KindPostgres, dsn)
	sources := make([]datasource.Source, 16)
	errs := make([]error, len(sources))
	var wg sync.WaitGroup
	for i := range sources {
		wg.Go(func() {
			sources[i], errs[i] = reg.Source(context.Background(), integ)
			if errs[i] == nil {
				_, errs[i] = sources[i].Select(context.Background(), datasource.SelectQuery{Table: "origin", Columns: []string{"label"}})
			}
		})
	}
	wg.Wait()
	for i, s := range sources {
		require.NoError(t, errs[i])
		require.Same(t, sources[0], s, "concurrent first calls share one pool")
	}
}

func TestRegistryRefusals(t *testing.T) {
	t.Parallel()
	missing := filepath.Join(t.TempDir(), "missing.db")
	f := sqliteFixture(t)
	cases := []struct {
		name    string
		integ   func() models.Integration
		sqlite  bool
		code    apperr.Code
		message string
	}{
		{"not a data source", func() models.Integration {
			return integration(t, "rest", "https://example.test")
		}, false, apperr.Invalid, `integration "inventory db" (kind "rest") is not a data source`},
		{"no dsn", func() models.Integration {
			return integration(t, datasource.KindPostgres, "")
		}, false, apperr.BadGateway, `integration "inventory db" has no dsn secret`},
		{"unparseable dsn", func() models.Integration {
			return integration(t, datasource.KindPostgres, "postgres://u:hunter2@[::1:5432/db")
		}, false, apperr.BadGateway, "the DSN is not a valid Postgres connection string"},
		{"sqlite outside dev", func() models.Integration {
			return integration(t, datasource.KindSQLite, f.dsn)
		}, false, apperr.NotImplemented, "SQLite data sources are served only by appruntime dev"},
		{"sqlite file missing", func() models.Integration {
			return integration(t, datasource.KindSQLite, missing)
		}, true, apperr.BadGateway, "the SQLite file does not exist"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			reg := newRegistry(t)
			if tc.sqlite {
				require.NoError(t, reg.EnableSQLite(missing))
			}
			_, err := reg.Source(context.Background(), tc.integ())
			require.Equal(t, tc.code, apperr.CodeOf(err), "%v", err)
			_, _, msg := apperr.Public(err)
			require.Contains(t, msg, tc.message)
			require.NotContains(t, msg, "hunter2")
		})
	}
}

func TestRegistryClose(t *testing.T) {
	t.Parallel()
	reg := datasource.NewRegistry(box(t), datasource.Options{})
	reg.Close()
	_, err := reg.Source(context.Background(), integration(t, datasource.KindPostgres, testkit.DatabaseURL()))
	require.Equal(t, apperr.Unavailable, apperr.CodeOf(err))
}

// TestSQLiteOnlyTheSeededFile: even in dev, a sqlite integration opens only
// the file the seed enabled, never the dev platform's own database or any
// other file the process can read.
func TestSQLiteOnlyTheSeededFile(t *testing.T) {
	t.Parallel()
	f := sqliteFixture(t) // a registry that enabled f.dsn, as the seed does
	platformDB := filepath.Join(filepath.Dir(f.dsn), "dev.db")
	require.NoError(t, os.WriteFile(platformDB, nil, 0o600))

	reg := newRegistry(t)
	require.NoError(t, reg.EnableSQLite(f.dsn))
	src, err := reg.Source(context.Background(), integration(t, datasource.KindSQLite, f.dsn))
	require.NoError(t, err)
	require.Equal(t, []int64{1, 2, 3, 4, 5}, ids(t, src, inventory(nil)))

	for _, dsn := range []string{platformDB, "/etc/passwd", "file:" + f.dsn, f.dsn + "?mode=rw", filepath.Dir(f.dsn) + "/./../" +
		filepath.Base(filepath.Dir(f.dsn)) + "/dev.db"} {
		_, err := reg.Source(context.Background(), integration(t, datasource.KindSQLite, dsn))
		require.Equal(t, apperr.Forbidden, apperr.CodeOf(err), "%s: %v", dsn, err)
		_, _, msg := apperr.Public(err)
		require.Contains(t, msg, "a SQLite data source may only be the dev demo's own file")
	}
	_, err = newRegistry(t).Source(context.Background(), integration(t, datasource.KindSQLite, f.dsn))
	require.Equal(t, apperr.NotImplemented, apperr.CodeOf(err), "outside dev no SQLite file opens: %v", err)
}
