package api_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/require"

	"github.com/appruntime/appruntime/internal/agentmcp"
	"github.com/appruntime/appruntime/internal/testkit"
	"github.com/appruntime/appruntime/models"
)

// bearerTransport adds an agent token and, when set, the task header to
// every request of the SDK's client, as an MCP host configured with
// headers does.
type bearerTransport struct {
	token, taskID string
}

func (b bearerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	if b.taskID != "" {
		r.Header.Set(agentmcp.TaskHeader, b.taskID)
	}
	return http.DefaultTransport.RoundTrip(r)
}

// connectMCP opens an MCP session with the Go SDK's own client on the API's
// /mcp, as an agent platform would.
func connectMCP(t *testing.T, a *testAPI, token, taskID string) *mcp.ClientSession {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	client := mcp.NewClient(&mcp.Implementation{Name: "appruntime-test", Version: "1"}, nil)
	cs, err := client.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: a.URL + "/mcp",
		HTTPClient: &http.Client{Transport: bearerTransport{token: token, taskID: taskID}}, MaxRetries: -1}, nil)
	require.NoError(t, err)
	t.Cleanup(func() { _ = cs.Close() })
	return cs
}

// toolNamed is the tool of list called name (the SDK lists tools by name).
func toolNamed(t *testing.T, list []*mcp.Tool, name string) *mcp.Tool {
	t.Helper()
	i := slices.IndexFunc(list, func(tool *mcp.Tool) bool { return tool.Name == name })
	require.GreaterOrEqual(t, i, 0, "no tool %q", name)
	return list[i]
}

func toolText(t *testing.T, res *mcp.CallToolResult) string {
	t.Helper()
	require.Len(t, res.Content, 1)
	text, ok := res.Content[0].(*mcp.TextContent)
	require.True(t, ok, "%T", res.Content[0])
	return text.Text
}

// TestAgentMCPServer: the SDK's client initializes, lists the agent's
// declaration and app tool (injected keys removed), calls a url-target
// tool against a loopback upstream (recorded as the tool-calls route
// records it), and every refusal is a result with isError; another
// workspace's task and tool are out of reach, and a wrong token is a 401
// with a Bearer challenge.
func TestAgentMCPServer(t *testing.T) {
	t.Parallel()
	a := newTestAPI(t)
	f := newAppToolFixture(t, a.Store.DB)
	tn := f.Tenant
	require.NoError(t, a.Store.DB.Model(&f.Tool).Update("input_schema", models.JSON(`{"type": "object",
		"properties": {"report_id": {"type": "integer"}, "configured_tool_id": {"type": "string", "x-exclude-from-llm": true},
		"secret_hint": {"type": "string", "x-exclude-from-llm": true}}, "required": ["report_id"]}`)).Error)
	startWorker(t, a)
	var mu sync.Mutex
	var received []string
	seen := func() []string {
		mu.Lock()
		defer mu.Unlock()
		return slices.Clone(received)
	}
	upstream := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		mu.Lock()
		received = append(received, string(body))
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"content": "echo ` + jsonEscape(string(body)) + `"}`))
	}))
	t.Cleanup(upstream.Close)
	declare(t, a, tn, map[string]any{"name": "echo", "displayName": "Echo", "description": "Echoes q",
		"input":  map[string]any{"type": "object", "properties": map[string]any{"q": map[string]any{"type": "string"}}, "required": []string{"q"}},
		"target": map[string]any{"type": "url", "url": upstream.URL + "/echo", "method": "POST", "body": "${input}"}})
	taskID := newTask(t, a, tn)
	ctx := context.Background()

	cs := connectMCP(t, a, tn.AgentToken, taskID)
	require.Equal(t, "appruntime", cs.InitializeResult().ServerInfo.Name)
	list, err := cs.ListTools(ctx, nil)
	require.NoError(t, err)
	require.Len(t, list.Tools, 3, "the declaration, the app tool and the app-only renew tool")
	require.Equal(t, "Echoes q", toolNamed(t, list.Tools, "echo").Description)
	appSchema, err := json.Marshal(toolNamed(t, list.Tools, "invoice_review").InputSchema)
	require.NoError(t, err)
	require.JSONEq(t, `{"type": "object", "properties": {"report_id": {"type": "integer"}}, "required": ["report_id"]}`, string(appSchema))

	// A call runs as POST /api/agent/tasks/{id}/tool-calls does: the
	// upstream is reached, and the call, its step and its feed event are
	// recorded on the task.
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"q": "invoice"}})
	require.NoError(t, err)
	require.False(t, res.IsError, "%s", toolText(t, res))
	require.Equal(t, `echo {"q":"invoice"}`, toolText(t, res))
	require.Equal(t, []string{`{"q":"invoice"}`}, seen())
	var call models.ToolCall
	require.NoError(t, a.Store.DB.Where("task_id = ?", taskID).Take(&call).Error)
	require.Equal(t, models.ToolCallCompleted, call.Status)
	require.Equal(t, tn.Agent.ID, call.AgentID)
	var events int64
	require.NoError(t, a.Store.DB.Model(&models.FeedEvent{}).Where("task_id = ? AND type = ?", taskID, models.FeedToolCall).Count(&events).Error)
	require.EqualValues(t, 1, events)

	// Bad input, like the route's 400, is a tool error; nothing is sent.
	res, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"q": 1}})
	require.NoError(t, err)
	require.True(t, res.IsError)
	require.Contains(t, toolText(t, res), "invalid: input does not match")
	require.Len(t, seen(), 1)

	// Without the task header a call is refused, as a tool error.
	bare := connectMCP(t, a, tn.AgentToken, "")
	res, err = bare.CallTool(ctx, &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"q": "x"}})
	require.NoError(t, err)
	require.True(t, res.IsError)
	require.Contains(t, toolText(t, res), agentmcp.TaskHeader)

	// Another workspace: its agent does not see our tools, and cannot run
	// its own on our task; we cannot run ours on its task.
	other := testkit.NewTenant(t, a.Store.DB)
	otherTask := newTask(t, a, other)
	theirs := connectMCP(t, a, other.AgentToken, taskID)
	list, err = theirs.ListTools(ctx, nil)
	require.NoError(t, err)
	require.Empty(t, list.Tools)
	_, err = theirs.CallTool(ctx, &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"q": "x"}})
	require.Error(t, err, "an unknown tool is a protocol error")
	onTheirs := connectMCP(t, a, tn.AgentToken, otherTask)
	res, err = onTheirs.CallTool(ctx, &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"q": "x"}})
	require.NoError(t, err)
	require.True(t, res.IsError)
	require.Contains(t, toolText(t, res), "not_found")
	require.Len(t, seen(), 1)

	// The app tool adds its step (the tool has await_review: the task parks).
	res, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: "invoice_review", Arguments: map[string]any{"report_id": 7}})
	require.NoError(t, err)
	require.False(t, res.IsError, "%s", toolText(t, res))
	var step models.Step
	require.NoError(t, a.Store.DB.Where("task_id = ? AND kind = ?", taskID, models.StepAppTool).Take(&step).Error)
	require.Equal(t, f.Tool.ID, *step.ConfiguredToolID)
	require.Contains(t, toolText(t, res), step.ID)
	r := a.call(t, "GET", "/api/agent/tasks/"+taskID, tn.AgentToken, nil)
	require.Equal(t, "waiting_for_input", r.Body["status"])

	// GET (the server-to-client stream) is not offered: 405 once the token is checked.
	req, err := http.NewRequest("GET", a.URL+"/mcp", nil)
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+tn.AgentToken)
	req.Header.Set("Accept", "text/event-stream")
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	_ = resp.Body.Close()
	require.Equal(t, http.StatusMethodNotAllowed, resp.StatusCode)

	// A wrong token is a 401 with a Bearer challenge; so is none.
	for _, token := range []string{"", tn.AdminToken, "nope"} {
		req, err := http.NewRequest("POST", a.URL+"/mcp", nil)
		require.NoError(t, err)
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		_ = resp.Body.Close()
		require.Equal(t, 401, resp.StatusCode, "token %q", token)
		require.Contains(t, resp.Header.Get("WWW-Authenticate"), "Bearer")
	}
}

// TestAgentToolsList: GET /api/agent/tools lists the same tools in each
// vendor's shape; an unknown format is 400, an admin token 401.
func TestAgentToolsList(t *testing.T) {
	t.Parallel()
	a := newTestAPI(t)
	f := newAppToolFixture(t, a.Store.DB)
	tn := f.Tenant
	declare(t, a, tn, map[string]any{"name": "echo", "displayName": "Echo", "description": "Echoes q",
		"input":  map[string]any{"type": "object", "properties": map[string]any{"q": map[string]any{"type": "string"}}},
		"target": map[string]any{"type": "url", "url": "https://example.com/echo", "method": "POST", "body": "${input}"}})

	r := a.call(t, "GET", "/api/agent/tools", tn.AgentToken, nil)
	require.Equal(t, 200, r.Status, "%s", r.Raw)
	require.Equal(t, "native", r.Body["format"])
	tools := admList(t, r, "tools")
	require.Len(t, tools, 2)
	require.Equal(t, map[string]any{"name": "echo", "title": "Echo", "description": "Echoes q", "kind": "agent_tool",
		"input_schema": map[string]any{"type": "object", "properties": map[string]any{"q": map[string]any{"type": "string"}}}}, tools[0])
	require.Equal(t, "app_tool", tools[1]["kind"])
	require.Equal(t, f.Tool.ID, tools[1]["configured_tool_id"])

	r = a.call(t, "GET", "/api/agent/tools?format=openai", tn.AgentToken, nil)
	require.Equal(t, 200, r.Status, "%s", r.Raw)
	fn := admList(t, r, "tools")[0]
	require.Equal(t, "function", fn["type"])
	require.Equal(t, "echo", fn["function"].(map[string]any)["name"])
	require.NotNil(t, fn["function"].(map[string]any)["parameters"])

	r = a.call(t, "GET", "/api/agent/tools?format=anthropic", tn.AgentToken, nil)
	require.Equal(t, 200, r.Status, "%s", r.Raw)
	require.Equal(t, []string{"description", "input_schema", "name"}, keysOf(admList(t, r, "tools")[1]))

	r = a.call(t, "GET", "/api/agent/tools?format=mcp", tn.AgentToken, nil)
	require.Equal(t, 200, r.Status, "%s", r.Raw)
	require.Contains(t, admList(t, r, "tools")[0], "inputSchema")

	r = a.call(t, "GET", "/api/agent/tools?format=cohere", tn.AgentToken, nil)
	require.Equal(t, 400, r.Status, "%s", r.Raw)
	r = a.call(t, "GET", "/api/agent/tools", tn.AdminToken, nil)
	require.Equal(t, 401, r.Status, "%s", r.Raw)

	// Another workspace's agent lists only its own (none).
	other := testkit.NewTenant(t, a.Store.DB)
	r = a.call(t, "GET", "/api/agent/tools", other.AgentToken, nil)
	require.Equal(t, 200, r.Status, "%s", r.Raw)
	require.Empty(t, admList(t, r, "tools"))
}

func keysOf(m map[string]any) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}
