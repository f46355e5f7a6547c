package api_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/appruntime/appruntime/internal/agenttool"
	"github.com/appruntime/appruntime/internal/config"
	"github.com/appruntime/appruntime/internal/outbox"
	"github.com/appruntime/appruntime/internal/testkit"
	"github.com/appruntime/appruntime/models"
	"github.com/appruntime/appruntime/worker"
)

// component is a loopback component integration: it verifies every
// request's identity token against the API's published JWKS and records
// what it saw.
type component struct {
	srv      *httptest.Server
	id       string // its integration id
	mu       sync.Mutex
	claims   []agenttool.IdentityClaims
	apiKeys  []string
	starts   atomic.Int64
	failures atomic.Int64
}

func newComponent(t *testing.T, a *testAPI, tn testkit.Tenant) *component {
	t.Helper()
	cp := &component{}
	cp.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		res, body := fetch(t, a.URL+"/.well-known/jwks.json")
		if res.StatusCode != 200 {
			http.Error(w, "no jwks", http.StatusInternalServerError)
			return
		}
		var set agenttool.JWKS
		if err := json.Unmarshal(body, &set); err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		tok, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
		claims, err := agenttool.VerifyIdentity(tok, set, a.URL, cp.id)
		if !ok || err != nil {
			http.Error(w, "bad identity", http.StatusUnauthorized)
			return
		}
		cp.mu.Lock()
		cp.claims = append(cp.claims, claims)
		cp.apiKeys = append(cp.apiKeys, r.Header.Get("X-Api-Key"))
		cp.mu.Unlock()
		in, _ := io.ReadAll(r.Body)
		w.Header().Set("Content-Type", "application/json")
		switch r.URL.Path {
		case "/tools/lookup":
			_, _ = w.Write([]byte(`{"content": "found ` + jsonEscape(string(in)) + `", "markdown": "**Found** <script>x()</script> [docs](/relative)"}`))
		case "/tools/connect":
			_, _ = w.Write([]byte(`{"type": "pending_input", "title": "Connect Gmail", "description": "Connect first.", "elements": [
				{"type": "button", "id": "skip", "label": "Skip", "input": {"answer": "skipped"}},
				{"type": "button", "id": "connect", "label": "Connect", "input": {"scope": "gmail.readonly"},
				 "target": {"type": "app", "path": "/oauth/start", "method": "POST", "body": "${input}"}},
				{"type": "button", "id": "broken", "label": "Broken", "input": {},
				 "target": {"type": "app", "path": "/oauth/fail", "method": "POST"}}]}`))
		case "/oauth/start":
			cp.starts.Add(1)
			_, _ = w.Write([]byte(`{"content": "connected with ` + jsonEscape(string(in)) + `"}`))
		case "/oauth/fail":
			cp.failures.Add(1)
			http.Error(w, "upstream secret detail", http.StatusInternalServerError)
		default:
			http.NotFound(w, r)
		}
	}))
	t.Cleanup(cp.srv.Close)
	r := a.call(t, "POST", "/api/admin/integrations", tn.AdminToken, map[string]any{
		"name": "api", "kind": "component", "base_url": cp.srv.URL, "secrets": map[string]any{"env": map[string]any{"API_KEY": "k-123"}},
	})
	require.Equal(t, 201, r.Status, "%s", r.Raw)
	cp.id = admID(t, r)
	return cp
}

func jsonEscape(s string) string {
	b, _ := json.Marshal(s)
	return string(b[1 : len(b)-1])
}

func (cp *component) seen() ([]agenttool.IdentityClaims, []string) {
	cp.mu.Lock()
	defer cp.mu.Unlock()
	return append([]agenttool.IdentityClaims(nil), cp.claims...), append([]string(nil), cp.apiKeys...)
}

// startWorker runs a worker on the API's platform, so that tool calls run
// on the lookup queue as in production.
func startWorker(t *testing.T, a *testAPI) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- worker.New(a.P.WorkerServices()).Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		require.NoError(t, <-done)
	})
}

// declare saves an agent tool and returns its id.
func declare(t *testing.T, a *testAPI, tn testkit.Tenant, decl map[string]any) string {
	t.Helper()
	r := a.call(t, "POST", "/api/admin/agents/"+tn.Agent.ID+"/tools", tn.AdminToken, decl)
	require.Equal(t, 201, r.Status, "%s", r.Raw)
	return admID(t, r)
}

func appTool(name, component, path string) map[string]any {
	return map[string]any{
		"name": name, "displayName": "Tool " + name, "description": "Does " + name,
		"input": map[string]any{"type": "object", "properties": map[string]any{"q": map[string]any{"type": "string"}}, "additionalProperties": false},
		"target": map[string]any{"type": "app", "component": component, "path": path, "method": "POST", "body": "${input}",
			"headers": map[string]any{"X-Api-Key": "${env.API_KEY}"}},
	}
}

func newTask(t *testing.T, a *testAPI, tn testkit.Tenant) string {
	t.Helper()
	r := a.call(t, "POST", "/api/agent/tasks", tn.AgentToken, map[string]any{"title": "t"})
	require.Equal(t, 201, r.Status, "%s", r.Raw)
	return admID(t, r)
}

func TestAgentToolDeclarationsAdmin(t *testing.T) {
	t.Parallel()
	a := newTestAPI(t)
	tn := testkit.NewTenant(t, a.Store.DB)
	cp := newComponent(t, a, tn)
	base := "/api/admin/agents/" + tn.Agent.ID + "/tools"

	id := declare(t, a, tn, appTool("lookup", cp.id, "/tools/lookup"))
	r := a.call(t, "GET", base+"/"+id, tn.AdminToken, nil)
	require.Equal(t, 200, r.Status, "%s", r.Raw)
	require.Equal(t, "lookup", r.Body["name"])
	require.Equal(t, "Tool lookup", r.Body["displayName"])

	// Refusals at save, each a 400 naming the problem.
	withAuth := appTool("auth", cp.id, "/x")
	withAuth["target"].(map[string]any)["headers"] = map[string]any{"authorization": "Bearer mine"}
	badSchema := appTool("schema", cp.id, "/x")
	badSchema["input"] = map[string]any{"type": "object", "properties": map[string]any{"q": map[string]any{"type": "strin"}}}
	unknown := appTool("unknown", cp.id, "/x")
	unknown["extra"] = true
	badName := appTool("has space", cp.id, "/x")
	unknownEnv := appTool("env", cp.id, "/x")
	unknownEnv["target"].(map[string]any)["headers"] = map[string]any{"X-Api-Key": "${env.NOPE}"}
	for name, body := range map[string]map[string]any{
		"Authorization": withAuth, "schema": badSchema, "unknown field": unknown, "name": badName, "env": unknownEnv,
	} {
		r := a.call(t, "POST", base, tn.AdminToken, body)
		require.Equal(t, 400, r.Status, "%s: %s", name, r.Raw)
	}
	r = a.call(t, "POST", base, tn.AdminToken, withAuth)
	require.Contains(t, r.Body["error"], "Authorization")

	// One name per agent; a patch is checked whole; delete.
	r = a.call(t, "POST", base, tn.AdminToken, appTool("lookup", cp.id, "/tools/other"))
	require.Equal(t, 409, r.Status, "%s", r.Raw)
	r = a.call(t, "PATCH", base+"/"+id, tn.AdminToken, map[string]any{"description": "Looks things up"})
	require.Equal(t, 200, r.Status, "%s", r.Raw)
	require.Equal(t, "Looks things up", r.Body["description"])
	r = a.call(t, "PATCH", base+"/"+id, tn.AdminToken, map[string]any{"target": map[string]any{"headers": map[string]any{"Authorization": "x"}}})
	require.Equal(t, 400, r.Status, "%s", r.Raw)
	r = a.call(t, "GET", base, tn.AdminToken, nil)
	require.Len(t, admList(t, r, "tools"), 1)
	r = a.call(t, "DELETE", base+"/"+id, tn.AdminToken, nil)
	require.Equal(t, 204, r.Status)
	r = a.call(t, "GET", base+"/"+id, tn.AdminToken, nil)
	require.Equal(t, 404, r.Status)

	// Another workspace's admin sees nothing.
	other := testkit.NewTenant(t, a.Store.DB)
	r = a.call(t, "GET", base, other.AdminToken, nil)
	require.Equal(t, 404, r.Status)
}

// TestAgentToolCallAppTarget: the call reaches the loopback component with
// a signed identity token the component verifies with the JWKS, its env
// resolved, and the result lands in the step and the feed.
func TestAgentToolCallAppTarget(t *testing.T) {
	t.Parallel()
	a := newTestAPI(t)
	tn := testkit.NewTenant(t, a.Store.DB)
	cp := newComponent(t, a, tn)
	startWorker(t, a)
	declare(t, a, tn, appTool("lookup", cp.id, "/tools/lookup"))
	taskID := newTask(t, a, tn)

	r := a.call(t, "POST", "/api/agent/tasks/"+taskID+"/tool-calls", tn.AgentToken, map[string]any{"name": "lookup", "input": map[string]any{"q": "invoice"}})
	require.Equal(t, 201, r.Status, "%s", r.Raw)
	require.Equal(t, "completed", r.Body["status"])
	result := r.Body["result"].(map[string]any)
	require.Equal(t, `found {"q":"invoice"}`, result["content"])
	require.Equal(t, "markdown", result["display"])
	require.Contains(t, result["html"], "&lt;script&gt;")
	require.Contains(t, result["html"], `<code class="dead-link">/relative</code>`)
	callID := admID(t, r)

	claims, keys := cp.seen()
	require.Len(t, claims, 1)
	require.Equal(t, agenttool.IdentityClaims{WorkspaceID: tn.Workspace.ID, AgentID: tn.Agent.ID, TaskID: taskID, ToolCallID: callID, Tool: "lookup"}, claims[0])
	require.Equal(t, []string{"k-123"}, keys)

	var events []models.FeedEvent
	require.NoError(t, a.Store.DB.Where("task_id = ? AND type = ?", taskID, models.FeedToolCall).Find(&events).Error)
	require.Len(t, events, 1)
	var step models.Step
	require.NoError(t, a.Store.DB.Where("id = ?", *events[0].StepID).Take(&step).Error)
	require.Equal(t, models.StepCompleted, step.Status)
	require.Equal(t, models.StepAgentTool, step.Kind)

	// Input that breaks the schema, and an unknown tool, call nothing.
	r = a.call(t, "POST", "/api/agent/tasks/"+taskID+"/tool-calls", tn.AgentToken, map[string]any{"name": "lookup", "input": map[string]any{"q": 1}})
	require.Equal(t, 400, r.Status, "%s", r.Raw)
	r = a.call(t, "POST", "/api/agent/tasks/"+taskID+"/tool-calls", tn.AgentToken, map[string]any{"name": "nope"})
	require.Equal(t, 404, r.Status, "%s", r.Raw)
	claims, _ = cp.seen()
	require.Len(t, claims, 1)
}

// TestAgentToolCallURLTargetToPrivateAddressRefused: without the allow
// setting a url target to a loopback address is refused (403) and the
// failure recorded on the call's step.
func TestAgentToolCallURLTargetToPrivateAddressRefused(t *testing.T) {
	t.Parallel()
	a := newTestAPI(t, func(c *config.Config) { c.OutboundAllow = nil })
	tn := testkit.NewTenant(t, a.Store.DB)
	startWorker(t, a)
	var hits atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { hits.Add(1) }))
	t.Cleanup(srv.Close)
	declare(t, a, tn, map[string]any{"name": "ext", "displayName": "Ext", "description": "External",
		"input":  map[string]any{"type": "object"},
		"target": map[string]any{"type": "url", "url": srv.URL + "/hook", "method": "POST", "body": "${input}"}})
	taskID := newTask(t, a, tn)
	r := a.call(t, "POST", "/api/agent/tasks/"+taskID+"/tool-calls", tn.AgentToken, map[string]any{"name": "ext", "input": map[string]any{}})
	require.Equal(t, 403, r.Status, "%s", r.Raw)
	require.Zero(t, hits.Load())
	var call models.ToolCall
	require.NoError(t, a.Store.DB.Where("task_id = ?", taskID).Take(&call).Error)
	require.Equal(t, models.ToolCallFailed, call.Status)
	require.Contains(t, call.Error, "refused address")
}

// parkOnCard calls the connect tool, whose reply is a card: the task parks.
func parkOnCard(t *testing.T, a *testAPI, tn testkit.Tenant, cp *component) (taskID, callID string) {
	t.Helper()
	declare(t, a, tn, appTool("connect", cp.id, "/tools/connect"))
	taskID = newTask(t, a, tn)
	r := a.call(t, "POST", "/api/agent/tasks/"+taskID+"/tool-calls", tn.AgentToken, map[string]any{"name": "connect", "input": map[string]any{}})
	require.Equal(t, 201, r.Status, "%s", r.Raw)
	require.Equal(t, "pending_input", r.Body["status"])
	callID = admID(t, r)
	card := r.Body["pending_input"].(map[string]any)
	require.Equal(t, "Connect Gmail", card["title"])
	require.Len(t, card["elements"], 3)
	r = a.call(t, "GET", "/api/agent/tasks/"+taskID, tn.AgentToken, nil)
	require.Equal(t, "waiting_for_input", r.Body["status"])
	return taskID, callID
}

// parkedTask is an API with a worker, a component, and a task parked on
// the connect tool's card.
type parkedTask struct {
	a              *testAPI
	tn             testkit.Tenant
	cp             *component
	taskID, callID string
}

func newParkedTask(t *testing.T) parkedTask {
	t.Helper()
	a := newTestAPI(t)
	tn := testkit.NewTenant(t, a.Store.DB)
	cp := newComponent(t, a, tn)
	startWorker(t, a)
	taskID, callID := parkOnCard(t, a, tn, cp)
	return parkedTask{a: a, tn: tn, cp: cp, taskID: taskID, callID: callID}
}

// resumeEvents counts the resume events written for a task.
func resumeEvents(t *testing.T, a *testAPI, taskID string) int {
	t.Helper()
	return testkit.ResumeEvents(t, a.Store.DB, taskID)
}

func buttonPath(taskID, callID, button string) string {
	return "/api/tasks/" + taskID + "/tool-calls/" + callID + "/buttons/" + button
}

// TestPendingInputRacingClicksResumeOnce: 20 concurrent clicks on a
// button with a target run it once and resume the task once.
func TestPendingInputRacingClicksResumeOnce(t *testing.T) {
	t.Parallel()
	pt := newParkedTask(t)
	a, tn, cp, taskID, callID := pt.a, pt.tn, pt.cp, pt.taskID, pt.callID

	const clicks = 20
	statuses := make([]int, clicks)
	var wg sync.WaitGroup
	for i := range clicks {
		wg.Add(1)
		go func() {
			defer wg.Done()
			statuses[i] = a.call(t, "POST", buttonPath(taskID, callID, "connect"), tn.HostToken, nil).Status
		}()
	}
	wg.Wait()
	ok, conflicts := 0, 0
	for _, s := range statuses {
		switch s {
		case 200:
			ok++
		case 409:
			conflicts++
		}
	}
	require.Equal(t, 1, ok, "statuses: %v", statuses)
	require.Equal(t, clicks-1, conflicts, "statuses: %v", statuses)
	require.EqualValues(t, 1, cp.starts.Load(), "the target ran once")
	require.Equal(t, 1, resumeEvents(t, a, taskID))

	var call models.ToolCall
	require.NoError(t, a.Store.DB.Where("id = ?", callID).Take(&call).Error)
	require.Equal(t, models.ToolCallCompleted, call.Status)
	require.Contains(t, string(call.Result), `connected with {\"scope\":\"gmail.readonly\"}`)
	claims, _ := cp.seen()
	require.Equal(t, tn.Admin.ID, claims[len(claims)-1].UserID, "the button's request names the person who clicked")
	var aw models.TaskAwait
	require.NoError(t, a.Store.DB.Where("task_id = ? AND source_type = ?", taskID, models.AwaitSourceToolCall).Take(&aw).Error)
	require.Equal(t, models.AwaitResolved, aw.Status)

	// The relay and the resume handler put the task back to running.
	_, err := a.P.Relay.RunOnce(t.Context())
	require.NoError(t, err)
	var rows []models.Outbox
	require.NoError(t, a.Store.DB.Where("kind = ?", outbox.KindResumeEvent).Find(&rows).Error)
	for _, row := range rows {
		require.NoError(t, a.P.Resumes.HandleResume(t.Context(), row.ID))
	}
	r := a.call(t, "GET", "/api/agent/tasks/"+taskID, tn.AgentToken, nil)
	require.Equal(t, "running", r.Body["status"])

	// A click after the answer is refused.
	r = a.call(t, "POST", buttonPath(taskID, callID, "skip"), tn.HostToken, nil)
	require.Equal(t, 409, r.Status, "%s", r.Raw)
}

// TestPendingInputButtonWithoutTarget: its input is the tool result.
func TestPendingInputButtonWithoutTarget(t *testing.T) {
	t.Parallel()
	pt := newParkedTask(t)
	a, tn, cp, taskID, callID := pt.a, pt.tn, pt.cp, pt.taskID, pt.callID
	// The host finds the card among the task's tool calls.
	r := a.call(t, "GET", "/api/tasks/"+taskID+"/tool-calls", tn.HostToken, nil)
	require.Equal(t, 200, r.Status, "%s", r.Raw)
	calls := admList(t, r, "tool_calls")
	require.Len(t, calls, 1)
	require.Equal(t, callID, calls[0]["id"])
	require.Equal(t, "Connect Gmail", calls[0]["pending_input"].(map[string]any)["title"])
	require.Equal(t, 404, a.call(t, "GET", "/api/tasks/"+taskID+"/tool-calls", testkit.NewTenant(t, a.Store.DB).HostToken, nil).Status)

	r = a.call(t, "POST", buttonPath(taskID, callID, "skip"), tn.HostToken, nil)
	require.Equal(t, 200, r.Status, "%s", r.Raw)
	require.Equal(t, `{"answer":"skipped"}`, r.Body["result"].(map[string]any)["content"])
	require.Zero(t, cp.starts.Load())
	require.Equal(t, 1, resumeEvents(t, a, taskID))
	// Another workspace's host and an unknown button are 404; the agent's token is 401/403.
	other := testkit.NewTenant(t, a.Store.DB)
	require.Equal(t, 404, a.call(t, "POST", buttonPath(taskID, callID, "skip"), other.HostToken, nil).Status)
	require.Equal(t, 404, a.call(t, "POST", buttonPath(taskID, callID, "nope"), tn.HostToken, nil).Status)
	require.NotEqual(t, 200, a.call(t, "POST", buttonPath(taskID, callID, "skip"), tn.AgentToken, nil).Status)
}

// TestPendingInputFailingTargetStaysParked: the error is shown, the task
// stays parked, nothing resumes, and the card still takes a click.
func TestPendingInputFailingTargetStaysParked(t *testing.T) {
	t.Parallel()
	pt := newParkedTask(t)
	a, tn, cp, taskID, callID := pt.a, pt.tn, pt.cp, pt.taskID, pt.callID
	r := a.call(t, "POST", buttonPath(taskID, callID, "broken"), tn.HostToken, nil)
	require.Equal(t, 502, r.Status, "%s", r.Raw)
	require.NotContains(t, string(r.Raw), "upstream secret detail")
	require.EqualValues(t, 1, cp.failures.Load())
	require.Zero(t, resumeEvents(t, a, taskID))
	var call models.ToolCall
	require.NoError(t, a.Store.DB.Where("id = ?", callID).Take(&call).Error)
	require.Equal(t, models.ToolCallPendingInput, call.Status)
	require.Contains(t, call.Error, "answered 500")
	var ev models.FeedEvent
	require.NoError(t, a.Store.DB.Where("task_id = ? AND type = ?", taskID, models.FeedToolCallClick).Take(&ev).Error)
	require.Contains(t, string(ev.Payload), "answered 500")
	r = a.call(t, "GET", "/api/agent/tasks/"+taskID, tn.AgentToken, nil)
	require.Equal(t, "waiting_for_input", r.Body["status"])

	r = a.call(t, "POST", buttonPath(taskID, callID, "skip"), tn.HostToken, nil)
	require.Equal(t, 200, r.Status, "%s", r.Raw)
	require.Equal(t, 1, resumeEvents(t, a, taskID))
}
