package demo_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"io"
	"log/slog"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/appruntime/appruntime/internal/admin"
	"github.com/appruntime/appruntime/internal/apperr"
	"github.com/appruntime/appruntime/internal/artifact"
	"github.com/appruntime/appruntime/internal/auth"
	"github.com/appruntime/appruntime/internal/demo"
	"github.com/appruntime/appruntime/internal/logging"
	"github.com/appruntime/appruntime/internal/platform"
	"github.com/appruntime/appruntime/internal/runtime"
	"github.com/appruntime/appruntime/internal/store"
	"github.com/appruntime/appruntime/internal/testkit"
	"github.com/appruntime/appruntime/internal/webhook"
	"github.com/appruntime/appruntime/models"
)

// seededTables are the platform tables the seed writes to.
var seededTables = []string{
	"workspaces", "users", "agents", "api_tokens", "integrations", "bindings", "binding_versions", "bundles",
	"blobs", "configured_tools", "tasks", "steps", "task_awaits", "feed_events", "outbox", "audit_log",
}

// newPlatform builds a platform on st as the dev mode does (the seed admits
// its own file as a sqlite data source, and no other).
func newPlatform(t *testing.T, st *store.Store) *platform.Platform {
	t.Helper()
	rd := testkit.Redis(t)
	p, err := platform.New(context.Background(), platform.Options{
		Config: testkit.Config(testkit.DatabaseURL(), testkit.RedisURL()), Log: logging.New(io.Discard, slog.LevelError),
		Store: st, Redis: rd.Client, KeyPrefix: rd.Prefix, Queues: rd.Queues,
	})
	require.NoError(t, err)
	t.Cleanup(p.Close)
	return p
}

func demoSecrets() demo.Secrets {
	return demo.Secrets{
		AdminPassword: "demo-password-123",
		HostToken:     auth.NewTokenSecret(models.ScopeHost),
		AgentToken:    auth.NewTokenSecret(models.ScopeAgent),
		AdminToken:    auth.NewTokenSecret(models.ScopeAdmin),
		WebhookSecret: base64.RawURLEncoding.EncodeToString([]byte("0123456789abcdef0123456789abcdef")),
	}
}

func countRows(t *testing.T, st *store.Store) map[string]int64 {
	t.Helper()
	counts := map[string]int64{}
	for _, table := range seededTables {
		var n int64
		require.NoError(t, st.DB.Table(table).Count(&n).Error, table)
		counts[table] = n
	}
	return counts
}

func TestSeedTwiceMakesTheDemoOnceThroughTheDomainServices(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		open func(testing.TB) *store.Store
	}{
		{"sqlite", testkit.SQLite},
		{"postgres", testkit.Schema},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			st := tc.open(t)
			p := newPlatform(t, st)
			secrets := demoSecrets()
			dataSource := filepath.Join(t.TempDir(), "demo-data.db")

			first, err := demo.Seed(ctx, p, secrets, dataSource)
			require.NoError(t, err)
			counts := countRows(t, st)
			second, err := demo.Seed(ctx, p, secrets, dataSource)
			require.NoError(t, err)
			require.Equal(t, first, second, "a second run finds the same objects")
			require.Equal(t, counts, countRows(t, st), "a second run creates nothing")

			for table, want := range map[string]int64{
				"workspaces": 1, "users": 1, "agents": 1, "integrations": 1, "bindings": 1, "binding_versions": 1,
				"bundles": 1, "configured_tools": 1, "tasks": 1, "steps": 1, "task_awaits": 1,
			} {
				require.Equal(t, want, counts[table], table)
			}
			checkSeeded(t, p, st, first, secrets)
		})
	}
}

// checkSeeded checks that what the seed made is what the domain services
// make: audited changes, a versioned binding, working tokens and secrets,
// and a real artifact whose session reads the demo data source.
func checkSeeded(t *testing.T, p *platform.Platform, st *store.Store, info demo.Info, secrets demo.Secrets) {
	t.Helper()
	ctx := context.Background()

	var actions []string
	require.NoError(t, st.DB.Model(&models.AuditEntry{}).Where("actor = ?", demo.Actor).Order("action").Pluck("action", &actions).Error)
	require.Subset(t, actions, []string{"workspace.create", "user.create", "agent.create", "agent.set_webhook_secret",
		"token.store", "integration.create", "binding.create", "bundle.create", "configured_tool.create"})

	var version models.BindingVersion
	require.NoError(t, st.DB.Where("binding_id = ?", info.BindingID).Take(&version).Error)
	require.Equal(t, 1, version.Version)

	for scope, secret := range map[string]string{
		models.ScopeHost: secrets.HostToken, models.ScopeAgent: secrets.AgentToken, models.ScopeAdmin: secrets.AdminToken,
	} {
		pr, err := auth.Verify(ctx, st.DB, secret, scope)
		require.NoError(t, err, "the fixed %s token works", scope)
		require.Equal(t, info.WorkspaceID, pr.WorkspaceID)
		switch scope {
		case models.ScopeHost:
			require.Equal(t, info.AdminUserID, pr.UserID)
		case models.ScopeAgent:
			require.Equal(t, info.AgentID, pr.AgentID)
		}
	}
	_, err := auth.CheckPassword(ctx, st.DB, demo.AdminEmail, secrets.AdminPassword)
	require.NoError(t, err, "the admin logs in with the fixed password")

	var agent models.Agent
	require.NoError(t, st.DB.Where("id = ?", info.AgentID).Take(&agent).Error)
	opened, err := p.Secrets.Open(agent.WebhookSecretEnc)
	require.NoError(t, err)
	keys, err := webhook.ParseStoredKeyring(opened)
	require.NoError(t, err)
	fixed, err := webhook.FromLegacy([]byte(secrets.WebhookSecret))
	require.NoError(t, err)
	require.True(t, keys.Current.Equal(fixed), "resume webhooks are signed with the fixed secret")

	var task models.Task
	require.NoError(t, st.DB.Where("id = ?", info.TaskID).Take(&task).Error)
	require.Equal(t, models.TaskWaitingForInput, task.Status, "the demo task is parked")
	var step models.Step
	require.NoError(t, st.DB.Where("id = ?", info.StepID).Take(&step).Error)
	var out struct {
		AwaitID  string          `json:"await_id"`
		BundleID string          `json:"bundle_id"`
		Params   json.RawMessage `json:"params"`
	}
	require.NoError(t, json.Unmarshal(step.Output, &out))
	require.Equal(t, info.BundleID, out.BundleID)
	require.JSONEq(t, `{"report_id": 59137}`, string(out.Params))
	var await models.TaskAwait
	require.NoError(t, st.DB.Where("id = ?", out.AwaitID).Take(&await).Error)
	require.Equal(t, info.StepID, await.CorrelationKey)
	require.Equal(t, models.AwaitPending, await.Status)

	d, err := p.Artifacts.Mint(ctx, artifact.MintRequest{WorkspaceID: info.WorkspaceID, UserID: info.AdminUserID, StepID: info.StepID})
	require.NoError(t, err)
	require.Equal(t, out.AwaitID, *d.AwaitID)
	claims, err := p.Sessions.Verify(ctx, d.SessionToken)
	require.NoError(t, err)
	res, err := p.Runtime.Read(ctx, claims, []byte(`{"op": "list_invoices"}`))
	require.NoError(t, err)
	require.Equal(t, 3, res.Body.(*runtime.RowsReply).RowCount, "the demo binding reads the demo data source")
}

// TestASQLiteIntegrationIsSavedOnlyForTheDemoFile: in dev an admin may save
// a sqlite integration for the demo's own file and nothing else (the dev
// platform's database above all), refused when saved with a 400 that says
// why; outside dev the kind is refused whatever the file.
func TestASQLiteIntegrationIsSavedOnlyForTheDemoFile(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st := testkit.SQLite(t)
	create := func(p *platform.Platform, workspace, dsn string) error {
		raw, err := json.Marshal(dsn)
		require.NoError(t, err)
		_, err = p.Admin.CreateIntegration(ctx, workspace, "test", admin.IntegrationInput{
			Name: "data " + dsn, Kind: admin.KindSQLite, Secrets: map[string]json.RawMessage{"dsn": raw}})
		return err
	}

	outside := newPlatform(t, st)
	w, err := outside.Admin.CreateWorkspace(ctx, "test", admin.WorkspaceInput{Name: "outside dev"})
	require.NoError(t, err)
	err = create(outside, w.ID, filepath.Join(t.TempDir(), "demo-data.db"))
	require.True(t, apperr.Is(err, apperr.Invalid), "%v", err)
	require.ErrorContains(t, err, "kind sqlite is for the embedded dev mode only")

	p := newPlatform(t, testkit.SQLite(t))
	dataSource := filepath.Join(t.TempDir(), "demo-data.db")
	info, err := demo.Seed(ctx, p, demoSecrets(), dataSource)
	require.NoError(t, err)
	for _, dsn := range []string{filepath.Join(filepath.Dir(dataSource), "dev.db"), "/etc/passwd", "file:" + dataSource, dataSource + "?mode=rw"} {
		err := create(p, info.WorkspaceID, dsn)
		require.True(t, apperr.Is(err, apperr.Invalid), "%s: %v", dsn, err)
		require.ErrorContains(t, err, "may only be the dev demo's own file", dsn)
	}
	require.NoError(t, create(p, info.WorkspaceID, dataSource))
}
