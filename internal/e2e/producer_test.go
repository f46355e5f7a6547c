package e2e_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/appruntime/appruntime/internal/bindingspec"
	"github.com/appruntime/appruntime/internal/datasource"
	"github.com/appruntime/appruntime/internal/testkit"
	"github.com/appruntime/appruntime/models"
)

// TestProducerSeedsRowsTheBundleReads: adding an app-tool step whose tool
// names a producer answers at once with the step still being built; a mint
// then is 409 with Retry-After; the producer (python under bwrap, on the
// script queue) seeds rows through the binding; the agent API and the feed
// show the artifact ready, and a /read returns the seeded rows. A producer
// that raises fails its step with its error.
func TestProducerSeedsRowsTheBundleReads(t *testing.T) {
	t.Parallel()
	rs := newRunStack(t)
	ctx := context.Background()
	db := rs.Store.DB
	ws, agent := rs.tenant.Workspace.ID, rs.tenant.Agent.ID

	source := testkit.DataSource(t)
	require.NoError(t, source.DB.Exec(`CREATE TABLE lines (id integer PRIMARY KEY, task_id text NOT NULL, label text NOT NULL)`).Error)
	secrets, err := rs.P.Secrets.SealJSON(datasource.Secrets{DSN: testkit.URLOf(source)})
	require.NoError(t, err)
	integ := models.Integration{ID: models.NewID(), WorkspaceID: ws, Name: "lines", Kind: "postgres", SecretsEnc: secrets}
	require.NoError(t, db.Create(&integ).Error)
	spec, err := json.Marshal(bindingspec.Spec{
		Reads: []bindingspec.Read{{Op: "list_lines", Table: "lines", Columns: []string{"id", "label"},
			FixedFilters: map[string]any{"task_id": "{{task_id}}"}, OrderBy: []bindingspec.Order{{Column: "id"}}, Limit: 50}},
		Writes: []bindingspec.Write{{Op: "add_line", Table: "lines", Mode: bindingspec.ModeInsert, Columns: []string{"id", "label"},
			FixedValues: map[string]any{"task_id": "{{task_id}}"}}},
	})
	require.NoError(t, err)
	b, err := rs.P.Bindings.Create(ctx, ws, "test", bindingspec.Input{Name: "lines", BindingKind: bindingspec.KindPostgres, IntegrationID: integ.ID, AllowedOperations: spec})
	require.NoError(t, err)
	bundleID := models.NewID()
	require.NoError(t, db.Create(&models.Bundle{ID: bundleID, Version: 1, WorkspaceID: ws, Name: "lines", SHA256: "00", ContentType: "text/html", Size: 1, StorageKey: "k"}).Error)

	newApp := func(code string) string {
		producer := models.ConfiguredTool{ID: models.NewID(), WorkspaceID: ws, AgentID: agent, DisplayName: "producer " + models.NewID(),
			BaseTool: models.BasePythonCode, Config: models.MustJSON(map[string]any{"code": code})}
		require.NoError(t, db.Create(&producer).Error)
		app := models.ConfiguredTool{ID: models.NewID(), WorkspaceID: ws, AgentID: agent, DisplayName: "lines " + producer.ID,
			BaseTool: models.BaseAppTool, BundleID: &bundleID, BindingID: &b.ID, ProducerToolID: &producer.ID}
		require.NoError(t, db.Create(&app).Error)
		return app.ID
	}
	newTask := func() string {
		task := models.Task{ID: models.NewID(), WorkspaceID: ws, AgentID: agent, Status: models.TaskRunning}
		require.NoError(t, db.Create(&task).Error)
		return task.ID
	}
	waitStep := func(taskID, stepID string) map[string]any {
		t.Helper()
		var step map[string]any
		require.Eventually(t, func() bool {
			task := rs.must(t, 200, "GET", "/api/agent/tasks/"+taskID, rs.tenant.AgentToken, nil)
			for _, s := range task["steps"].([]any) {
				if s.(map[string]any)["id"] == stepID {
					step = s.(map[string]any)
				}
			}
			return step != nil && step["status"] != models.StepRunning
		}, 60*time.Second, 50*time.Millisecond)
		return step
	}

	seeding := newApp("import time\ndef main(input):\n    time.sleep(1)\n    return {'writes': [{'op': 'add_line', 'row': {'id': i, 'label': 'line %d of report %d' % (i, input['report_id'])}} for i in range(1, 4)]}\n")
	taskID := newTask()
	step := rs.must(t, 201, "POST", "/api/agent/tasks/"+taskID+"/steps", rs.tenant.AgentToken,
		map[string]any{"configured_tool_id": seeding, "params": map[string]any{"report_id": 7}})
	require.Equal(t, models.StepRunning, step["status"], "the call returns with the step still being built")
	stepID := step["id"].(string)
	r := rs.call(t, "POST", "/api/app-tools/sessions", rs.tenant.HostToken, map[string]any{"step_id": stepID})
	require.Equal(t, 409, r.Status, string(r.Raw))
	require.Equal(t, "2", r.Header.Get("Retry-After"))

	require.Equal(t, models.StepCompleted, waitStep(taskID, stepID)["status"])
	var ready int64
	require.NoError(t, db.Model(&models.FeedEvent{}).Where("task_id = ? AND step_id = ? AND type = ?", taskID, stepID, "artifact_ready").Count(&ready).Error)
	require.Equal(t, int64(1), ready, "the feed shows the artifact ready")
	d := rs.must(t, 201, "POST", "/api/app-tools/sessions", rs.tenant.HostToken, map[string]any{"step_id": stepID})
	read := rs.call(t, "POST", "/api/app-runtime/read", d["session_token"].(string), map[string]any{"op": "list_lines"})
	require.Equal(t, 200, read.Status, string(read.Raw))
	require.Equal(t, []any{
		[]any{float64(1), "line 1 of report 7"}, []any{float64(2), "line 2 of report 7"}, []any{float64(3), "line 3 of report 7"},
	}, read.Body["rows"], "the bundle reads the seeded rows")

	raising := newApp("def main(input):\n    raise ValueError('report 7 has no lines')\n")
	taskID = newTask()
	step = rs.must(t, 201, "POST", "/api/agent/tasks/"+taskID+"/steps", rs.tenant.AgentToken, map[string]any{"configured_tool_id": raising})
	failed := waitStep(taskID, step["id"].(string))
	require.Equal(t, models.StepFailed, failed["status"])
	require.Contains(t, failed["error"], "report 7 has no lines")
	r = rs.call(t, "POST", "/api/app-tools/sessions", rs.tenant.HostToken, map[string]any{"step_id": step["id"]})
	require.Equal(t, 409, r.Status, string(r.Raw))
	require.Empty(t, r.Header.Get("Retry-After"))
}
