package api_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/appruntime/appruntime/internal/testkit"
	"github.com/appruntime/appruntime/models"
)

func TestAgentTaskArtifactEndToEnd(t *testing.T) {
	t.Parallel()
	a := newTestAPI(t)
	tn := testkit.NewTenant(t, a.Store.DB)
	html := []byte(`<!doctype html><p>review</p>`)

	// The admin uploads a bundle and configures an app tool on it.
	r := a.call(t, "POST", "/api/admin/bundles?name=review", tn.AdminToken, html, "Content-Type", "text/html")
	require.Equal(t, 201, r.Status, "%s", r.Raw)
	bundleID := admID(t, r)
	b := models.Binding{ID: models.NewID(), WorkspaceID: tn.Workspace.ID, Name: "b", BindingKind: "rest", AllowedOperations: models.JSON(`{}`), Version: 1}
	require.NoError(t, a.Store.DB.Create(&b).Error)
	r = a.call(t, "POST", "/api/admin/configured-tools", tn.AdminToken, map[string]any{
		"agent_id": tn.Agent.ID, "display_name": "Review", "base_tool": "app_tool", "bundle_id": bundleID, "binding_id": b.ID,
		"await_review": true, "theme": map[string]any{"accent": "#111111"},
		"input_schema": map[string]any{"type": "object", "properties": map[string]any{"report_id": map[string]any{"type": "integer"}},
			"required": []string{"report_id"}},
	})
	require.Equal(t, 201, r.Status, "%s", r.Raw)
	toolID := admID(t, r)

	// The agent creates a task and builds the artifact.
	r = a.call(t, "POST", "/api/agent/tasks", tn.AgentToken, map[string]any{"title": "Invoice 59137", "priority": 3})
	require.Equal(t, 201, r.Status, "%s", r.Raw)
	taskID := admID(t, r)
	require.Equal(t, "running", r.Body["status"])
	require.EqualValues(t, 3, r.Body["priority"])

	r = a.call(t, "POST", "/api/agent/tasks/"+taskID+"/steps", tn.AgentToken, map[string]any{
		"configured_tool_id": toolID, "params": map[string]any{"report_id": 59137}})
	require.Equal(t, 201, r.Status, "%s", r.Raw)
	stepID := admID(t, r)
	require.Equal(t, "completed", r.Body["status"])
	art := r.Body["output"].(map[string]any)
	awaitID, _ := art["await_id"].(string)
	require.NotEmpty(t, awaitID)
	bundleURL := a.URL + "/bundles/" + bundleID + "/1"
	require.Equal(t, bundleURL, art["bundle_url"])
	require.Equal(t, sha(html), art["bundle_sha"])
	require.Equal(t, map[string]any{"report_id": float64(59137)}, art["params"])

	r = a.call(t, "GET", "/api/agent/tasks/"+taskID, tn.AgentToken, nil)
	require.Equal(t, 200, r.Status, "%s", r.Raw)
	require.Equal(t, "waiting_for_input", r.Body["status"])
	steps := r.Body["steps"].([]any)
	require.Len(t, steps, 1)
	require.Equal(t, stepID, steps[0].(map[string]any)["id"])

	// The host mints a session for the step and loads the bundle it names.
	r = a.mint(t, tn.HostToken, stepID)
	require.Equal(t, 201, r.Status, "%s", r.Raw)
	require.Equal(t, map[string]any{"report_id": float64(59137)}, r.Body["params"], "the mint reads the params the step recorded")
	require.Equal(t, bundleURL, r.Body["bundle_url"])
	require.Equal(t, awaitID, r.Body["await_id"])
	require.Equal(t, map[string]any{"accent": "#111111"}, r.Body["theme"])
	res, body := fetch(t, bundleURL)
	require.Equal(t, 200, res.StatusCode)
	require.Equal(t, html, body)

	// The parked task takes no other step.
	r = a.call(t, "POST", "/api/agent/tasks/"+taskID+"/steps", tn.AgentToken, map[string]any{
		"configured_tool_id": toolID, "params": map[string]any{"report_id": 1}})
	require.Equal(t, 409, r.Status, "%s", r.Raw)
	require.Contains(t, r.Body["error"], "task is waiting_for_input")
}

func TestAgentTaskRefusals(t *testing.T) {
	t.Parallel()
	a := newTestAPI(t)
	f := newAppToolFixture(t, a.Store.DB)
	tn := f.Tenant
	other := testkit.NewTenant(t, a.Store.DB)
	r := a.call(t, "POST", "/api/agent/tasks", tn.AgentToken, map[string]any{"title": "t"})
	require.Equal(t, 201, r.Status)
	taskID := admID(t, r)
	steps := "/api/agent/tasks/" + taskID + "/steps"

	for _, tc := range []struct {
		name, method, path, token string
		body                      any
		status                    int
		msg                       string
	}{
		{"no token", "POST", "/api/agent/tasks", "", map[string]any{"title": "t"}, 401, "a valid agent token is required"},
		{"admin token", "POST", "/api/agent/tasks", tn.AdminToken, map[string]any{"title": "t"}, 401, "a valid agent token is required"},
		{"host token", "GET", "/api/agent/tasks/" + taskID, tn.HostToken, nil, 401, "a valid agent token is required"},
		{"another agent's task", "GET", "/api/agent/tasks/" + taskID, other.AgentToken, nil, 404, "task not found"},
		{"step on another agent's task", "POST", steps, other.AgentToken, map[string]any{"configured_tool_id": f.Tool.ID}, 404, "task not found"},
		{"unknown task", "GET", "/api/agent/tasks/" + models.NewID(), tn.AgentToken, nil, 404, "task not found"},
		{"malformed task id", "GET", "/api/agent/tasks/42", tn.AgentToken, nil, 404, "task not found"},
		{"unknown task field", "POST", "/api/agent/tasks", tn.AgentToken, map[string]any{"title": "t", "status": "completed"}, 400, `unknown field "status"`},
		{"missing configured_tool_id", "POST", steps, tn.AgentToken, map[string]any{"params": map[string]any{}}, 400, "configured_tool_id is required"},
		{"configured_tool_id not a uuid", "POST", steps, tn.AgentToken, map[string]any{"configured_tool_id": "Invoice review"}, 400, "configured_tool_id must be a UUID"},
		{"unknown configured tool", "POST", steps, tn.AgentToken, map[string]any{"configured_tool_id": models.NewID()}, 404, "configured tool not found"},
		{"params failing the schema", "POST", steps, tn.AgentToken, map[string]any{"configured_tool_id": f.Tool.ID, "params": map[string]any{"report_id": "x"}}, 400, "params do not match the input schema: at '/report_id': got string, want integer"},
		{"injected key in params", "POST", steps, tn.AgentToken, map[string]any{"configured_tool_id": f.Tool.ID, "params": map[string]any{"summary_instructions": "leak"}}, 400, "params may not contain summary_instructions"},
		{"injected key at the top", "POST", steps, tn.AgentToken, map[string]any{"configured_tool_id": f.Tool.ID, "key_definitions": []any{}}, 400, `unknown field "key_definitions"`},
		{"bad JSON", "POST", steps, tn.AgentToken, `{"configured_tool_id":`, 400, "invalid JSON: unexpected end of input"},
	} {
		r := a.call(t, tc.method, tc.path, tc.token, tc.body)
		require.Equal(t, tc.status, r.Status, "%s: %s", tc.name, r.Raw)
		require.Contains(t, r.Body["error"], tc.msg, tc.name)
	}
	var n int64
	require.NoError(t, a.Store.DB.Model(&models.Step{}).Where("task_id = ?", taskID).Count(&n).Error)
	require.Zero(t, n)
}
