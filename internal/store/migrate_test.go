package store_test

import (
	"context"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/appruntime/appruntime/internal/apperr"
	"github.com/appruntime/appruntime/internal/config"
	"github.com/appruntime/appruntime/internal/store"
	"github.com/appruntime/appruntime/internal/testkit"
	"github.com/appruntime/appruntime/models"
)

// column is a column's name and its type family, comparable across dialects.
type column struct{ Name, Family string }

func family(dataType string) string {
	t := strings.ToLower(dataType)
	switch {
	case strings.Contains(t, "uuid"), strings.Contains(t, "text"), strings.Contains(t, "char"):
		return "text"
	case strings.Contains(t, "json"):
		return "json"
	case strings.Contains(t, "timestamp"), strings.Contains(t, "datetime"):
		return "time"
	case strings.Contains(t, "bool"):
		return "bool"
	case strings.Contains(t, "bytea"), strings.Contains(t, "blob"):
		return "bytes"
	case strings.Contains(t, "double"), strings.Contains(t, "real"):
		return "float"
	case strings.Contains(t, "int"):
		return "int"
	}
	return t
}

func postgresSchema(t *testing.T, st *store.Store) map[string][]column {
	var rows []struct{ TableName, ColumnName, DataType string }
	require.NoError(t, st.DB.Raw(`SELECT table_name, column_name, data_type FROM information_schema.columns
		WHERE table_schema = current_schema() ORDER BY table_name, ordinal_position`).Scan(&rows).Error)
	out := map[string][]column{}
	for _, r := range rows {
		out[r.TableName] = append(out[r.TableName], column{r.ColumnName, family(r.DataType)})
	}
	return out
}

func sqliteSchema(t *testing.T, st *store.Store) map[string][]column {
	var tables []string
	require.NoError(t, st.DB.Raw(`SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'`).Scan(&tables).Error)
	out := map[string][]column{}
	for _, tbl := range tables {
		var cols []struct {
			Name string
			Type string
		}
		require.NoError(t, st.DB.Raw(`SELECT name, type FROM pragma_table_info(?) ORDER BY cid`, tbl).Scan(&cols).Error)
		for _, c := range cols {
			out[tbl] = append(out[tbl], column{c.Name, family(c.Type)})
		}
	}
	return out
}

func TestMigrationsYieldTheSameSchemaOnBothDialects(t *testing.T) {
	t.Parallel()
	pg := postgresSchema(t, testkit.Tx(t))
	lite := sqliteSchema(t, testkit.SQLite(t))

	require.NotEmpty(t, pg)
	var pgTables, liteTables []string
	for k := range pg {
		pgTables = append(pgTables, k)
	}
	for k := range lite {
		liteTables = append(liteTables, k)
	}
	sort.Strings(pgTables)
	sort.Strings(liteTables)
	require.Equal(t, pgTables, liteTables, "the two dialects must create the same tables")
	for _, tbl := range pgTables {
		require.Equal(t, pg[tbl], lite[tbl], "table %s: columns and type families differ", tbl)
	}
	for _, want := range []string{"workspaces", "users", "api_tokens", "agents", "integrations", "bindings",
		"binding_versions", "configured_tools", "bundles", "tasks", "steps", "task_awaits", "feed_events",
		"agent_key_values", "files", "translations", "usage_records", "app_sessions", "outbox", "audit_log"} {
		require.Contains(t, pg, want, "docs/architecture.md#data-model names table %s", want)
	}
}

func TestBothDialectsCarryTheSameMigrationVersions(t *testing.T) {
	t.Parallel()
	pg, err := store.Migrations(config.Postgres)
	require.NoError(t, err)
	lite, err := store.Migrations(config.SQLite)
	require.NoError(t, err)
	require.Equal(t, len(pg), len(lite))
	for i := range pg {
		require.Equal(t, pg[i].Version, lite[i].Version)
		require.Equal(t, pg[i].Name, lite[i].Name)
	}
}

func TestUnmigratedDatabaseIsRefusedWithAHint(t *testing.T) {
	t.Parallel()
	st, err := store.Open(context.Background(), "sqlite:"+t.TempDir()+"/empty.db", store.Options{})
	require.NoError(t, err)
	defer st.Close()

	err = st.CheckMigrated(context.Background())
	require.True(t, apperr.Is(err, apperr.NotMigrated), "got %v", err)
	require.Contains(t, err.Error(), "appruntime migrate")

	applied, err := st.Migrate(context.Background())
	require.NoError(t, err)
	require.NotEmpty(t, applied)
	require.NoError(t, st.CheckMigrated(context.Background()))

	again, err := st.Migrate(context.Background())
	require.NoError(t, err)
	require.Empty(t, again, "a second migrate applies nothing")
}

func TestMigrateIsSafeToRunConcurrentlyOnPostgres(t *testing.T) {
	t.Parallel()
	url := testkit.SchemaURL(t) // already migrated; the advisory lock must make reruns no-ops
	errs := make(chan error, 3)
	for range 3 {
		go func() {
			st, err := store.Open(context.Background(), url, store.Options{MaxOpenConns: 2})
			if err != nil {
				errs <- err
				return
			}
			defer st.Close()
			_, err = st.Migrate(context.Background())
			errs <- err
		}()
	}
	for range 3 {
		require.NoError(t, <-errs)
	}
}

// TestAnEmailIsUniquePerWorkspace: two workspaces may each have a user with
// one email (so creating one never tells whether another workspace has
// it); one workspace may not have two.
func TestAnEmailIsUniquePerWorkspace(t *testing.T) {
	t.Parallel()
	for name, st := range map[string]*store.Store{"postgres": testkit.Tx(t), "sqlite": testkit.SQLite(t)} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			db := st.DB
			now := time.Now().UTC()
			ws := []string{models.NewID(), models.NewID()}
			for _, id := range ws {
				require.NoError(t, db.Create(&models.Workspace{ID: id, Name: id, CreatedAt: now, UpdatedAt: now}).Error)
			}
			user := func(workspaceID string) error {
				return db.Create(&models.User{ID: models.NewID(), WorkspaceID: workspaceID, Email: "same@example.test",
					Role: models.RoleAdmin, PasswordHash: "-", CreatedAt: now, UpdatedAt: now}).Error
			}
			require.NoError(t, user(ws[0]))
			require.NoError(t, user(ws[1]), "another workspace may have the email")
			err := user(ws[0])
			require.True(t, store.IsUniqueViolation(err), "the same workspace may not: %v", err)
		})
	}
}

// TestRebuildingUsersOnSQLiteKeepsEveryRowAndForeignKey: SQLite's users
// table is rebuilt by 0003; the users, the rows that point at them and the
// foreign keys themselves survive.
func TestRebuildingUsersOnSQLiteKeepsEveryRowAndForeignKey(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st, err := store.Open(ctx, "sqlite:"+t.TempDir()+"/old.db", store.Options{})
	require.NoError(t, err)
	t.Cleanup(func() { _ = st.Close() })
	all, err := store.Migrations(config.SQLite)
	require.NoError(t, err)
	require.Equal(t, 1, all[0].Version)
	// A database as 0001 left it.
	var script []string
	for _, line := range strings.Split(all[0].SQL, "\n") {
		if !strings.HasPrefix(strings.TrimSpace(line), "--") {
			script = append(script, line)
		}
	}
	for _, stmt := range strings.Split(strings.Join(script, "\n"), ";") {
		if q := strings.TrimSpace(stmt); q != "" {
			require.NoError(t, st.DB.Exec(q).Error, q)
		}
	}
	require.NoError(t, st.DB.Exec(`CREATE TABLE schema_migrations (version integer PRIMARY KEY, name text NOT NULL, applied_at timestamp NOT NULL)`).Error)
	require.NoError(t, st.DB.Exec(`INSERT INTO schema_migrations VALUES (1, 'init', ?)`, time.Now().UTC()).Error)
	now := time.Now().UTC()
	ws := models.Workspace{ID: models.NewID(), Name: "w", CreatedAt: now, UpdatedAt: now}
	u := models.User{ID: models.NewID(), WorkspaceID: ws.ID, Email: "kept@example.test", Role: models.RoleAdmin, PasswordHash: "-", CreatedAt: now, UpdatedAt: now}
	tok := models.APIToken{ID: models.NewID(), WorkspaceID: ws.ID, Scope: models.ScopeHost, TokenHash: "h", UserID: &u.ID, CreatedAt: now}
	// The workspace row as 0001 knew it: the model has columns of later
	// migrations (review_claim_limit, 0019) that gorm would name.
	require.NoError(t, st.DB.Exec(`INSERT INTO workspaces (id, name, created_at, updated_at) VALUES (?, ?, ?, ?)`,
		ws.ID, ws.Name, ws.CreatedAt, ws.UpdatedAt).Error)
	for _, row := range []any{&u, &tok} {
		require.NoError(t, st.DB.Create(row).Error)
	}

	applied, err := st.Migrate(ctx)
	require.NoError(t, err)
	require.Contains(t, applied, 3)

	var users, tokens int64
	require.NoError(t, st.DB.Model(&models.User{}).Where("id = ? AND email = ?", u.ID, u.Email).Count(&users).Error)
	require.NoError(t, st.DB.Model(&models.APIToken{}).Where("user_id = ?", u.ID).Count(&tokens).Error)
	require.Equal(t, int64(1), users, "the user survived the rebuild")
	require.Equal(t, int64(1), tokens, "and the token that points at it")
	orphan := models.APIToken{ID: models.NewID(), WorkspaceID: ws.ID, Scope: models.ScopeHost, TokenHash: "h2", UserID: ptrTo(models.NewID()), CreatedAt: now}
	require.Error(t, st.DB.Create(&orphan).Error, "foreign keys are enforced again")
	// Every foreign key to users cascades, the later ones (0019's pool
	// members) too.
	pool := models.ReviewPool{ID: models.NewID(), WorkspaceID: ws.ID, Name: "p", CreatedAt: now, UpdatedAt: now}
	require.NoError(t, st.DB.Create(&pool).Error)
	require.NoError(t, st.DB.Create(&models.ReviewPoolMember{PoolID: pool.ID, UserID: u.ID}).Error)
	require.Error(t, st.DB.Create(&models.ReviewPoolMember{PoolID: pool.ID, UserID: models.NewID()}).Error, "a member must be a user")
	require.NoError(t, st.DB.Delete(&models.User{}, "id = ?", u.ID).Error)
	require.NoError(t, st.DB.Model(&models.APIToken{}).Where("user_id = ?", u.ID).Count(&tokens).Error)
	require.Zero(t, tokens, "and still cascade")
	var members int64
	require.NoError(t, st.DB.Model(&models.ReviewPoolMember{}).Where("user_id = ?", u.ID).Count(&members).Error)
	require.Zero(t, members, "a deleted user leaves their pools")
}

func ptrTo[T any](v T) *T { return &v }
