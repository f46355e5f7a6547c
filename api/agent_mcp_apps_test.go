package api_test

import (
	"context"
	"encoding/json"
	"net/url"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/require"

	"github.com/appruntime/appruntime/internal/agentmcp"
	"github.com/appruntime/appruntime/internal/bundle"
	"github.com/appruntime/appruntime/internal/testkit"
	"github.com/appruntime/appruntime/models"
)

// uploadMCPBundle uploads html as a new bundle (version 1) declaring
// grants, points the fixture's tool at it (unpinned) and returns its id.
func uploadMCPBundle(t *testing.T, a *testAPI, f appToolFixture, html string, grants url.Values) string {
	t.Helper()
	grants.Set("name", "mcp-app-"+suffix())
	r := a.call(t, "POST", "/api/admin/bundles?"+grants.Encode(), f.Tenant.AdminToken, []byte(html), "Content-Type", "text/html")
	require.Equal(t, 201, r.Status, "%s", r.Raw)
	id := admID(t, r)
	require.NoError(t, a.Store.DB.Model(&f.Tool).Updates(map[string]any{"bundle_id": id, "bundle_version": nil}).Error)
	return id
}

// sessionMeta decodes an app tool result's _meta session.
func sessionMeta(t *testing.T, res *mcp.CallToolResult) map[string]any {
	t.Helper()
	raw, err := json.Marshal(res.Meta[agentmcp.SessionMetaKey])
	require.NoError(t, err)
	var m map[string]any
	require.NoError(t, json.Unmarshal(raw, &m))
	return m
}

// TestAgentMCPApps: an app tool is an MCP App over the Go SDK's own
// client: its tools/list entry names its ui:// resource, resources/read
// returns the bundle's HTML as text/html;profile=mcp-app with the
// version's approved grants (and the runtime API's origin) in
// _meta.ui.csp, never a pending declaration; tools/call parks the task and
// returns the step's session in _meta (not in content); the app-only renew
// tool mints a fresh one; another workspace's agent reaches none of it.
func TestAgentMCPApps(t *testing.T) {
	t.Parallel()
	a := newTestAPI(t)
	f := newAppToolFixture(t, a.Store.DB)
	tn := f.Tenant
	const html = `<!doctype html><title>app</title><p>the app</p>`
	id := uploadMCPBundle(t, a, f, html, url.Values{"connectDomains": {"https://data.example.org"},
		"resourceDomains": {"https://cdn.example.org"}, "frameDomains": {"https://widgets.example.org"}})
	uri := agentmcp.AppResourceURI(f.Tool.ID)
	taskID := newTask(t, a, tn)
	ctx := context.Background()
	cs := connectMCP(t, a, tn.AgentToken, taskID)

	list, err := cs.ListTools(ctx, nil)
	require.NoError(t, err)
	require.Len(t, list.Tools, 2, "the app tool and the app-only renew tool")
	app, renew := toolNamed(t, list.Tools, "invoice_review"), toolNamed(t, list.Tools, agentmcp.RenewToolName)
	require.Equal(t, map[string]any{"resourceUri": uri, "visibility": []any{"model", "app"}}, app.Meta["ui"])
	require.Equal(t, map[string]any{"visibility": []any{"app"}}, renew.Meta["ui"])

	resources, err := cs.ListResources(ctx, nil)
	require.NoError(t, err)
	require.Len(t, resources.Resources, 1)
	require.Equal(t, uri, resources.Resources[0].URI)
	require.Equal(t, agentmcp.AppMIMEType, resources.Resources[0].MIMEType)

	read := func() (*mcp.ResourceContents, map[string]any) {
		t.Helper()
		res, err := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: uri})
		require.NoError(t, err)
		require.Len(t, res.Contents, 1)
		c := res.Contents[0]
		raw, err := json.Marshal(c.Meta["ui"])
		require.NoError(t, err)
		var ui map[string]any
		require.NoError(t, json.Unmarshal(raw, &ui))
		return c, ui["csp"].(map[string]any)
	}
	// Pending: only the runtime API's origin.
	c, csp := read()
	require.Equal(t, html, c.Text)
	require.Equal(t, "text/html;profile=mcp-app", c.MIMEType)
	require.Equal(t, uri, c.URI)
	require.Equal(t, map[string]any{"connectDomains": []any{a.URL}, "resourceDomains": []any{a.URL}, "frameDomains": []any{}}, csp,
		"a pending declaration grants nothing")
	// Approved: the declaration joins.
	_, err = a.P.Bundles.Decide(ctx, tn.Workspace.ID, "user:"+tn.Admin.ID, id, 1, bundle.DecisionApprove)
	require.NoError(t, err)
	_, csp = read()
	require.Equal(t, map[string]any{"connectDomains": []any{a.URL, "https://data.example.org"},
		"resourceDomains": []any{a.URL, "https://cdn.example.org"}, "frameDomains": []any{"https://widgets.example.org"}}, csp)
	// A new version declaring more is pending again: the tool mounts it, its CSP is the default one.
	r := a.call(t, "POST", "/api/admin/bundles/"+id+"/versions?connectDomains=https://more.example.org", tn.AdminToken,
		[]byte(html+"<p>v2</p>"), "Content-Type", "text/html")
	require.Equal(t, 201, r.Status, "%s", r.Raw)
	c, csp = read()
	require.Contains(t, c.Text, "v2")
	require.Equal(t, []any{a.URL}, csp["connectDomains"])

	// The call parks the task and hands the bundle a session in _meta.
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "invoice_review", Arguments: map[string]any{"report_id": 7}})
	require.NoError(t, err)
	require.False(t, res.IsError, "%s", toolText(t, res))
	var step models.Step
	require.NoError(t, a.Store.DB.Where("task_id = ? AND kind = ?", taskID, models.StepAppTool).Take(&step).Error)
	text := toolText(t, res)
	require.Contains(t, text, step.ID)
	sess := sessionMeta(t, res)
	token, _ := sess["session_token"].(string)
	require.NotEmpty(t, token)
	require.NotContains(t, text, token, "the session is not in what the model reads")
	structured, err := json.Marshal(res.StructuredContent)
	require.NoError(t, err)
	require.NotContains(t, string(structured), token)
	require.Equal(t, "init", sess["type"])
	require.Equal(t, step.ID, sess["step_id"])
	require.Equal(t, a.URL+"/api/app-runtime", sess["api_base"])
	require.Equal(t, map[string]any{"report_id": float64(7)}, sess["params"])
	require.NotNil(t, sess["await_id"], "the tool has await_review: the step parked the task")
	require.Equal(t, "waiting_for_input", a.call(t, "GET", "/api/agent/tasks/"+taskID, tn.AgentToken, nil).Body["status"])
	claims, err := a.P.Sessions.Verify(ctx, token)
	require.NoError(t, err)
	require.Equal(t, step.ID, claims.StepID)
	require.Equal(t, tn.Agent.ID, claims.AgentID)
	require.Empty(t, claims.UserID, "an agent token has no reviewer")
	var row models.AppSession
	require.NoError(t, a.Store.DB.Where("id = ?", claims.SessionID).Take(&row).Error)
	require.NotNil(t, row.TokenID, "the agent token minted it: revoking the token ends the session")

	// The app-only renew tool mints a fresh session for the step.
	res, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: agentmcp.RenewToolName, Arguments: map[string]any{"step_id": step.ID}})
	require.NoError(t, err)
	require.False(t, res.IsError, "%s", toolText(t, res))
	renewed := sessionMeta(t, res)
	require.NotEqual(t, token, renewed["session_token"])
	require.Equal(t, step.ID, renewed["step_id"])

	// Another workspace's agent: no tools, no resource, no renewal of our step.
	other := testkit.NewTenant(t, a.Store.DB)
	theirs := connectMCP(t, a, other.AgentToken, "")
	list, err = theirs.ListTools(ctx, nil)
	require.NoError(t, err)
	require.Empty(t, list.Tools)
	_, err = theirs.ReadResource(ctx, &mcp.ReadResourceParams{URI: uri})
	require.Error(t, err)
	require.Contains(t, err.Error(), "Resource not found")
	otherFixture := newAppToolFixture(t, a.Store.DB)
	mine := connectMCP(t, a, otherFixture.Tenant.AgentToken, "")
	_, err = mine.ReadResource(ctx, &mcp.ReadResourceParams{URI: uri})
	require.Error(t, err, "another workspace's app tool is not a resource of this agent")
	res, err = mine.CallTool(ctx, &mcp.CallToolParams{Name: agentmcp.RenewToolName, Arguments: map[string]any{"step_id": step.ID}})
	require.NoError(t, err)
	require.True(t, res.IsError)
	require.Contains(t, toolText(t, res), "not_found")
	require.Nil(t, res.Meta[agentmcp.SessionMetaKey])
}
