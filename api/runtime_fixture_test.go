package api_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"
	"gorm.io/gorm"

	"github.com/appruntime/appruntime/internal/bindingspec"
	"github.com/appruntime/appruntime/internal/datasource"
	"github.com/appruntime/appruntime/internal/limit"
	"github.com/appruntime/appruntime/internal/store"
	"github.com/appruntime/appruntime/internal/testkit"
	"github.com/appruntime/appruntime/models"
)

// runtimeFixture is a tenant with a real Postgres data source (table
// invoices), a binding over it, an app tool that parks its task, a task
// parked on one app-tool step, and a minted session for that step.
type runtimeFixture struct {
	api       *testAPI
	tenant    testkit.Tenant
	source    *store.Store // the data source (a schema of its own)
	bindingID string
	toolID    string
	taskID    string
	stepID    string
	awaitID   string
	token     string
}

// fixtureSpec is the binding of runtime tests.
func fixtureSpec() bindingspec.Spec {
	return bindingspec.Spec{
		Reads: []bindingspec.Read{{
			Op: "list_invoices", Table: "invoices", Columns: []string{"id", "vendor", "amount", "status"},
			Filterable: []string{"status", "vendor"}, OrderBy: []bindingspec.Order{{Column: "id"}}, Limit: 2,
		}},
		Writes: []bindingspec.Write{
			{Op: "set_status", Table: "invoices", Mode: bindingspec.ModeUpdate, KeyColumns: []string{"id"}, Columns: []string{"status"}},
			{Op: "record_decision", Table: "decisions", Mode: bindingspec.ModeInsert, Columns: []string{"decision"},
				FixedValues: map[string]any{"task_id": "{{task_id}}"}},
		},
		Actions: []bindingspec.Action{
			{Name: "approve", Writes: []string{"record_decision"}, FeedEvent: "invoice_approved", ResolvesAwait: true},
			{Name: "note_only", Writes: []string{"record_decision"}},
		},
		Tools: []bindingspec.Tool{{Op: "translate", Tool: "translate_text", Params: []string{"texts", "target_language"}}},
	}
}

func newRuntimeFixture(t *testing.T, opts ...apiOption) *runtimeFixture {
	t.Helper()
	return newRuntimeFixtureOn(t, testkit.Redis(t), opts...)
}

// newRuntimeFixtureOn is newRuntimeFixture on a Redis of the test's choice.
func newRuntimeFixtureOn(t *testing.T, rd testkit.RedisEnv, opts ...apiOption) *runtimeFixture {
	t.Helper()
	return newRuntimeFixtureWith(t, testkit.Schema(t), rd, func(dsn string) string { return dsn }, opts...)
}

// newRuntimeFixtureWith is newRuntimeFixture on a platform store and Redis of
// the test's choice, its integration reaching the data source at
// sourceDSN(the data source's own DSN) (a test's proxy, for one).
func newRuntimeFixtureWith(t *testing.T, st *store.Store, rd testkit.RedisEnv, sourceDSN func(string) string, opts ...apiOption) *runtimeFixture {
	t.Helper()
	a := newTestAPIOn(t, st, rd, opts...)
	f := &runtimeFixture{api: a, tenant: testkit.NewTenant(t, a.Store.DB)}
	ctx := context.Background()

	f.source = testkit.DataSource(t)
	require.NoError(t, f.source.DB.Exec(`CREATE TABLE invoices (id integer PRIMARY KEY, vendor text NOT NULL, amount numeric(12,2) NOT NULL, status text NOT NULL)`).Error)
	require.NoError(t, f.source.DB.Exec(`CREATE TABLE decisions (id serial PRIMARY KEY, task_id text NOT NULL, decision text NOT NULL)`).Error)
	require.NoError(t, f.source.DB.Exec(`INSERT INTO invoices VALUES (1,'ACME',10.50,'pending'),(2,'ACME',20,'pending'),(3,'Globex',30,'pending')`).Error)

	secrets, err := a.P.Secrets.SealJSON(datasource.Secrets{DSN: sourceDSN(testkit.URLOf(f.source))})
	require.NoError(t, err)
	integ := models.Integration{ID: models.NewID(), WorkspaceID: f.tenant.Workspace.ID, Name: "invoices db", Kind: "postgres", SecretsEnc: secrets}
	require.NoError(t, a.Store.DB.Create(&integ).Error)

	spec, err := json.Marshal(fixtureSpec())
	require.NoError(t, err)
	b, err := a.P.Bindings.Create(ctx, f.tenant.Workspace.ID, "test", bindingspec.Input{
		Name: "invoices", BindingKind: bindingspec.KindPostgres, IntegrationID: integ.ID, AllowedOperations: spec,
	})
	require.NoError(t, err)
	f.bindingID = b.ID

	bundleID := models.NewID()
	require.NoError(t, a.Store.DB.Create(&models.Bundle{ID: bundleID, Version: 1, WorkspaceID: f.tenant.Workspace.ID,
		Name: "b", SHA256: "00", ContentType: "text/html", Size: 1, StorageKey: "k"}).Error)
	tool := models.ConfiguredTool{ID: models.NewID(), WorkspaceID: f.tenant.Workspace.ID, AgentID: f.tenant.Agent.ID,
		DisplayName: "Review", BaseTool: models.BaseAppTool, BundleID: &bundleID, BindingID: &f.bindingID, AwaitReview: true}
	require.NoError(t, a.Store.DB.Create(&tool).Error)
	f.toolID = tool.ID
	f.taskID, f.stepID, f.awaitID = f.parkedStep(t)
	f.token = f.mint(t, f.stepID)
	return f
}

// parkedStep makes a task parked on one app-tool step with a pending await.
func (f *runtimeFixture) parkedStep(t *testing.T) (taskID, stepID, awaitID string) {
	t.Helper()
	db := f.api.Store.DB
	task := models.Task{ID: models.NewID(), WorkspaceID: f.tenant.Workspace.ID, AgentID: f.tenant.Agent.ID, Status: models.TaskWaitingForInput}
	require.NoError(t, db.Create(&task).Error)
	step := models.Step{ID: models.NewID(), TaskID: task.ID, Kind: models.StepAppTool, ConfiguredToolID: &f.toolID, Status: models.StepCompleted}
	require.NoError(t, db.Create(&step).Error)
	aw := models.TaskAwait{ID: models.NewID(), TaskID: task.ID, SourceType: models.AwaitSourceAppTool, CorrelationKey: step.ID, Status: models.AwaitPending}
	require.NoError(t, db.Create(&aw).Error)
	return task.ID, step.ID, aw.ID
}

// mint mints a session for step through the host API.
func (f *runtimeFixture) mint(t *testing.T, stepID string) string {
	t.Helper()
	r := f.api.call(t, "POST", "/api/app-tools/sessions", f.tenant.HostToken, map[string]string{"step_id": stepID})
	require.Equal(t, 201, r.Status, string(r.Raw))
	return r.Body["session_token"].(string)
}

// verb calls a runtime verb with the fixture's session.
func (f *runtimeFixture) verb(t *testing.T, verb string, body any, headers ...string) response {
	t.Helper()
	return f.api.call(t, "POST", "/api/app-runtime/"+verb, f.token, body, headers...)
}

func (f *runtimeFixture) db() *gorm.DB { return f.api.Store.DB }

// generousRate lifts the per-surface limit for tests that are not about it.
func generousRate(a *testAPI) { a.P.Limiter.SetRate(limit.Rate{PerSecond: 10000, Burst: 10000}) }
