package main_test

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"mime/multipart"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/appruntime/appruntime/internal/bindingspec"
	"github.com/appruntime/appruntime/internal/demo"
	"github.com/appruntime/appruntime/internal/testkit"
)

// TestDevModeFlows starts appruntime dev on its embedded defaults (SQLite
// and the in-process Redis) and on Postgres, runs the walk-through (docs/walkthrough.md),
// then drives the product's main flows over HTTP the way an agent platform,
// a host page and an admin do: the summary pass against a loopback
// OpenAI-compatible model that answers key details of every JSON kind; a
// mint, a read, a write, a /run of the python and CSV tools, a file upload
// and its file_preview, and the approving action whose resume webhook a
// loopback receiver gets, signed; a producer; an agent tool call parked on
// a pending-input card and the click that resumes it; an agent asset and a
// final reply with an app block; a review claim. Then the task's GET and
// the console's task pages answer 200 with the details, and the console's
// every page and link answers as the admin.
func TestDevModeFlows(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("starts the whole product")
	}
	for _, dialect := range []string{"sqlite", "postgres"} {
		t.Run(dialect, func(t *testing.T) {
			t.Parallel()
			runDevFlows(t, dialect)
		})
	}
}

// keyDetailsAnswer is what the stand-in model answers to the summary pass:
// a key detail of every JSON kind, and an integer past int64.
const keyDetailsAnswer = `{"vendor": "ACME Corp", "total_amount": 1234.5, "line_count": 3, "invoice_number": 12345678901234567890, "urgent": true,
	"address": {"city": "Lyon", "lines": ["1 rue A", null]}, "summary": "ACME's invoice, reviewed."}`

func runDevFlows(t *testing.T, dialect string) {
	model := newChatModel(t, keyDetailsAnswer)
	hooks := newWebhookReceiver(t)
	target := newToolTarget(t)

	dir := t.TempDir()
	apiAddr, consoleAddr := freeAddr(t), freeAddr(t)
	env := baseEnv("API_ADDR="+apiAddr, "CONSOLE_ADDR="+consoleAddr,
		"LLM_BASE_URL="+model.URL+"/v1", "LLM_API_KEY=stand-in", "LLM_MODEL=stand-in",
		"OUTBOUND_ALLOW_CIDRS=127.0.0.0/8")
	if dialect == "postgres" {
		env = append(env, "DATABASE_URL="+testkit.SchemaURL(t))
	}
	p := start(t, dir, env, "dev")
	waitHTTP(t, p, "http://"+apiAddr+"/readyz", 90*time.Second).Body.Close()
	waitHTTP(t, p, "http://"+consoleAddr+"/readyz", 10*time.Second).Body.Close()
	info := readDevInfo(t, dir)
	var secrets struct {
		WebhookSecret string `json:"webhook_secret"`
		BindingID     string `json:"binding_id"`
	}
	readJSONFile(t, filepath.Join(dir, ".appruntime", "dev.json"), &secrets)
	hooks.secret = secrets.WebhookSecret
	api := flowAPI{t: t, base: info.APIURL}

	// Quick start: the banner names the login and the tokens dev.json holds.
	for _, printed := range []string{info.ConsoleURL, info.AdminEmail, info.AdminPassword, info.HostToken, info.AgentToken, info.TaskID} {
		require.Contains(t, p.stdout.String(), printed, "the banner prints what dev.json holds")
	}
	// Building an artifact with curl: every block, every call 2xx.
	runWalkthroughBlocks(t, dir, env)

	// The review queue: the demo's parked task is claimed and put back.
	claim := api.do("POST", "/api/review/next", info.HostToken, nil, 200)
	claimed := claim["task"].(map[string]any)
	require.NotEmpty(t, claimed["step_id"], "a parked task is handed over: %v", claim)
	released := api.do("POST", "/api/review/tasks/"+claimed["task_id"].(string)+"/abort", info.HostToken, nil, 200)
	require.Equal(t, true, released["released"])

	// The admin: the agent's key details and resume webhook, the tools and a
	// binding that grants them beside the demo's ops.
	api.do("PATCH", "/api/admin/agents/"+info.AgentID, info.AdminToken, map[string]any{
		"resume_webhook_url": hooks.URL + "/resume",
		"key_definitions": []map[string]string{
			{"key": "vendor"}, {"key": "total_amount", "type": "number"}, {"key": "line_count", "type": "integer"}, {"key": "invoice_number", "type": "integer"},
			{"key": "urgent", "type": "boolean"}, {"key": "address", "description": "where the invoice goes"},
		},
	}, 200)
	tool := func(name, base string, config any, extra map[string]any) string {
		body := map[string]any{"agent_id": info.AgentID, "display_name": name, "base_tool": base, "config": config}
		for k, v := range extra {
			body[k] = v
		}
		return api.do("POST", "/api/admin/configured-tools", info.AdminToken, body, 201)["id"].(string)
	}
	tool("Double", "python_code_tool", map[string]any{"code": "def main(input):\n    return {'y': input['x'] * 2}\n"}, nil)
	tool("Vendors", "csv_lookup_tool", map[string]any{"file_name": "vendors.csv"}, nil)
	producer := tool("Seeder", "python_code_tool", map[string]any{
		"code": "def main(input):\n    return {'writes': [{'op': 'record_decision', 'row': {'decision': 'seeded', 'note': str(input['n'])}}]}\n"}, nil)
	demoBinding := api.do("GET", "/api/admin/bindings/"+secrets.BindingID, info.AdminToken, nil, 200)
	spec := demo.Spec()
	spec.Tools = []bindingspec.Tool{
		{Op: "double", Tool: "Double", Params: []string{"x"}},
		{Op: "vendor", Tool: "Vendors", Params: []string{"match_criteria", "return_columns"}},
	}
	binding := api.do("POST", "/api/admin/bindings", info.AdminToken, map[string]any{
		"name": "flows", "binding_kind": "postgres", "integration_id": demoBinding["integration_id"], "allowed_operations": spec,
	}, 201)["id"].(string)
	appTool := func(name string, extra map[string]any) string {
		for k, v := range map[string]any{"bundle_id": info.BundleID, "binding_id": binding,
			"input_schema": map[string]any{"type": "object", "properties": map[string]any{"n": map[string]any{"type": "integer"}}}} {
			extra[k] = v
		}
		return tool(name, "app_tool", nil, extra)
	}
	review := appTool("Flows review", map[string]any{"await_review": true})
	seeded := appTool("Flows seeded", map[string]any{"producer_tool_id": producer})

	// The agent: a task, a CSV file, and an artifact that parks the task;
	// the summary pass fills the key details from the stand-in model.
	task := api.do("POST", "/api/agent/tasks", info.AgentToken, map[string]any{"title": "Flows on " + dialect}, 201)["id"].(string)
	file := api.upload("/api/agent/tasks/"+task+"/files", info.AgentToken, "vendors.csv", "id,vendor,country\n1,ACME Corp,FR\n2,Globex,DE\n")
	step := api.do("POST", "/api/agent/tasks/"+task+"/steps", info.AgentToken, map[string]any{"configured_tool_id": review, "params": map[string]any{"n": 1}}, 201)
	require.Equal(t, "waiting_for_input", api.do("GET", "/api/agent/tasks/"+task, info.AgentToken, nil, 200)["status"])
	var details map[string]any
	require.Eventually(t, func() bool {
		details, _ = api.do("GET", "/api/agent/tasks/"+task, info.AgentToken, nil, 200)["key_values"].(map[string]any)
		return len(details) >= 7
	}, 60*time.Second, 100*time.Millisecond, "the summary pass fills the key details\nstderr:\n%s", p.stderr.String())
	require.Equal(t, map[string]any{"vendor": "ACME Corp", "total_amount": 1234.5, "line_count": float64(3), "invoice_number": 12345678901234567890.0, "urgent": true,
		"address": map[string]any{"city": "Lyon", "lines": []any{"1 rue A", nil}}, "summary": "ACME's invoice, reviewed."}, details)
	require.GreaterOrEqual(t, model.calls(), 1)

	// The host mints a session; the bundle reads, writes, runs the tools,
	// previews the file and approves.
	session := api.do("POST", "/api/app-tools/sessions", info.HostToken, map[string]any{"step_id": step["id"]}, 201)
	bundle := session["session_token"].(string)
	rows := api.do("POST", "/api/app-runtime/read", bundle, verb("list_invoices", map[string]any{"filters": map[string]any{"vendor": "ACME Corp"}}), 200)
	require.EqualValues(t, 2, rows["row_count"], "%v", rows)
	wrote := api.do("POST", "/api/app-runtime/write", bundle, verb("set_status", map[string]any{"row": map[string]any{"id": 2, "status": "held"}}), 200)
	require.EqualValues(t, 1, wrote["rows_affected"])
	if _, err := exec.LookPath("bwrap"); err == nil {
		ran := api.do("POST", "/api/app-runtime/run", bundle, verb("double", map[string]any{"x": 21}), 200)
		require.Equal(t, "ok", ran["status"], "%v", ran)
		require.Equal(t, map[string]any{"y": float64(42)}, ran["output"])
	} else {
		t.Log("python /run not driven: bwrap is not installed (python_code_tool needs it outside PYTHON_ALLOW_UNSANDBOXED)")
	}
	looked := api.do("POST", "/api/app-runtime/run", bundle, verb("vendor", map[string]any{
		"match_criteria": map[string]any{"vendor": "Globex"}, "return_columns": []string{"country"}}), 200)
	require.Equal(t, "ok", looked["status"], "%v", looked)
	require.Contains(t, fmt.Sprint(looked["output"]), "DE")
	preview := api.do("POST", "/api/app-runtime/capability", bundle, verb("file_preview", map[string]any{"file_id": file}), 200)
	require.Contains(t, fmt.Sprint(preview["result"]), "Globex", "%v", preview)
	approved := api.do("POST", "/api/app-runtime/action", bundle, verb("approve_invoice", map[string]any{
		"rows": map[string]any{"record_decision": map[string]any{"decision": "approved"}}}), 200)
	require.Equal(t, true, approved["results"].(map[string]any)["await_resolved"], "%v", approved)
	resumed := hooks.await(t, task)
	require.Equal(t, "action", resumed["reason"])
	require.Equal(t, "approve_invoice", resumed["action"])

	// A producer seeds its rows, then its artifact is ready.
	produced := api.do("POST", "/api/agent/tasks/"+task+"/steps", info.AgentToken, map[string]any{"configured_tool_id": seeded, "params": map[string]any{"n": 7}}, 201)
	require.Eventually(t, func() bool {
		return stepStatus(api.do("GET", "/api/agent/tasks/"+task, info.AgentToken, nil, 200), produced["id"].(string)) == "completed"
	}, 60*time.Second, 100*time.Millisecond, "the producer's step completes\nstderr:\n%s", p.stderr.String())

	// An agent tool call parks the task on a card; a host's click resumes it.
	api.do("POST", "/api/admin/agents/"+info.AgentID+"/tools", info.AdminToken, map[string]any{
		"name": "ask_reviewer", "displayName": "Ask the reviewer", "description": "Asks a person to choose.",
		"input":  map[string]any{"type": "object"},
		"target": map[string]any{"type": "url", "url": target.URL + "/card", "method": "POST", "body": "${input}"},
	}, 201)
	api.waitStatus(task, info.AgentToken, "running")
	call := api.do("POST", "/api/agent/tasks/"+task+"/tool-calls", info.AgentToken, map[string]any{"name": "ask_reviewer", "input": map[string]any{"q": "pay?"}}, 201)
	require.Equal(t, "pending_input", call["status"], "%v", call)
	require.Equal(t, "waiting_for_input", api.do("GET", "/api/agent/tasks/"+task, info.AgentToken, nil, 200)["status"])
	calls := api.list("GET", "/api/tasks/"+task+"/tool-calls", info.HostToken)
	require.Contains(t, fmt.Sprint(calls), "Pay now")
	clicked := api.do("POST", "/api/tasks/"+task+"/tool-calls/"+call["id"].(string)+"/buttons/pay", info.HostToken, nil, 200)
	require.Equal(t, "completed", clicked["status"], "%v", clicked)
	require.Equal(t, "pending_input", hooks.await(t, task)["reason"])
	api.waitStatus(task, info.AgentToken, "running")

	// An asset and the final reply that shows it.
	asset := api.raw("POST", "/api/agent/assets", info.AgentToken, "text/html", "<!doctype html><title>chart</title><p>42</p>", 201)["id"].(string)
	reply := api.do("POST", "/api/agent/tasks/"+task+"/replies", info.AgentToken, map[string]any{"final": true, "blocks": []any{
		map[string]any{"type": "text", "text": "Paid ACME."},
		map[string]any{"type": "app", "asset_id": asset, "title": "The chart", "fallback": "42"},
	}}, 201)
	require.Equal(t, "completed", reply["task_status"], "%v", reply)
	replies := api.list("GET", "/api/tasks/"+task+"/replies", info.HostToken)
	require.Len(t, replies, 1)
	assetURL := replies[0].(map[string]any)["asset_urls"].(map[string]any)[asset].(string)
	res, err := http.Get(assetURL)
	require.NoError(t, err)
	res.Body.Close()
	require.Equal(t, 200, res.StatusCode, assetURL)

	// The task as the agent and the console see it, with its details.
	got := api.do("GET", "/api/agent/tasks/"+task, info.AgentToken, nil, 200)
	require.Equal(t, "completed", got["status"])
	require.Len(t, got["key_values"], 7)
	require.Contains(t, string(api.send("GET", "/api/agent/tasks/"+task, info.AgentToken, "", nil, 200)),
		`"invoice_number":12345678901234567890`, "a number keeps its digits")
	console := signIn(t, info.ConsoleURL, info.AdminEmail, info.AdminPassword)
	for _, page := range []string{"/", "/tasks/" + task, "/tasks/" + task + "/steps/" + step["id"].(string) + "/artifact", "/tasks/" + info.TaskID} {
		status, body := console.get(t, page)
		require.Equal(t, 200, status, "console %s\n%s", page, body)
		if page == "/tasks/"+task {
			for _, shown := range []string{"Lyon", "1234.5", "ACME Corp", "Paid ACME.", "ask_reviewer", "12345678901234567890"} {
				require.Contains(t, body, shown, "the task page shows it")
			}
		}
	}
	// The admin releases the demo's parked task from its console page; a
	// message to the agent of the finished one is refused (no agent reads it).
	_, page := console.get(t, "/tasks/"+info.TaskID)
	release := regexp.MustCompile(`action="(/tasks/` + info.TaskID + `/awaits/[0-9a-f-]+/release)"`).FindStringSubmatch(page)
	require.NotNil(t, release, "the parked demo task offers Release")
	console.post(t, release[1], url.Values{"note": {"checked by hand"}})
	adminReleased := hooks.await(t, info.TaskID)
	require.Equal(t, "admin_release", adminReleased["reason"])
	require.Equal(t, "task.released", adminReleased["type"], "an admin's release is task.released")
	require.Equal(t, "checked by hand", adminReleased["note"], "with the admin's reason")
	status, refused := console.postStatus(t, "/tasks/"+task+"/messages", url.Values{"message": {"Thanks."}})
	require.Equal(t, 409, status, refused)
	require.Contains(t, refused, "the task is completed")
	require.NotContains(t, fmt.Sprint(api.do("GET", "/api/agent/tasks/"+task+"/events?after=0", info.AgentToken, nil, 200)), "Thanks.")

	crawl := crawlConsole(t, info.ConsoleURL, info.AdminEmail, info.AdminPassword)
	t.Logf("flows %s: console pages after the flows=%d failures=%d", dialect, crawl.visited, len(crawl.failures))
	require.Empty(t, crawl.failures)
	shown, errs := browseConsole(t, info.ConsoleURL, info.AdminEmail, info.AdminPassword, crawl.pages)
	t.Logf("flows %s: in Chromium after the flows: pages=%d console_errors=%d", dialect, shown, len(errs))
	require.Empty(t, errs, "the browser's console")

	require.NotContains(t, p.stderr.String(), `"level":"ERROR"`, "no error logged during the flows")
	_, err = p.stop(t)
	require.NoError(t, err, p.stderr.String())
}

// runWalkthroughBlocks runs the curl walk-through (docs/walkthrough.md) against the dev
// process started in dir; every call must answer 2xx.
func runWalkthroughBlocks(t *testing.T, dir string, env []string) {
	t.Helper()
	cmd := exec.Command("bash", "-c", curlStatusWrapper+strings.Join(walkthroughShellBlocks(t), "\n"))
	cmd.Dir, cmd.Env = dir, env
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	require.NoError(t, cmd.Run(), "the walk-through's blocks fail\nstdout:\n%s\nstderr:\n%s", stdout.String(), stderr.String())
	calls := 0
	for _, line := range strings.Split(strings.TrimSpace(stderr.String()), "\n") {
		m := httpLine.FindStringSubmatch(line)
		require.NotNil(t, m, "unexpected stderr line %q", line)
		require.Regexp(t, `^2\d\d$`, m[1], "%s %s\nstdout:\n%s", m[2], m[3], stdout.String())
		calls++
	}
	require.GreaterOrEqual(t, calls, 10, "the walk-through's calls were made")
}

func readJSONFile(t *testing.T, path string, v any) {
	t.Helper()
	raw, err := os.ReadFile(path)
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(raw, v))
}

// verb is a runtime verb's body.
func verb(op string, payload any) map[string]any { return map[string]any{"op": op, "payload": payload} }

// stepStatus is the status of step stepID in a task's GET.
func stepStatus(task map[string]any, stepID string) string {
	steps, _ := task["steps"].([]any)
	for _, s := range steps {
		if s, ok := s.(map[string]any); ok && s["id"] == stepID {
			status, _ := s["status"].(string)
			return status
		}
	}
	return ""
}

// flowAPI calls the dev API and checks each answer's status.
type flowAPI struct {
	t    *testing.T
	base string
}

func (a flowAPI) send(method, path, token, contentType string, body io.Reader, want int) []byte {
	a.t.Helper()
	req, err := http.NewRequest(method, a.base+path, body)
	require.NoError(a.t, err)
	req.Header.Set("Authorization", "Bearer "+token)
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	res, err := http.DefaultClient.Do(req)
	require.NoError(a.t, err)
	defer res.Body.Close()
	raw, err := io.ReadAll(res.Body)
	require.NoError(a.t, err)
	require.Equal(a.t, want, res.StatusCode, "%s %s: %s", method, path, raw)
	return raw
}

// do sends body as JSON (none when nil) and decodes the object answered.
func (a flowAPI) do(method, path, token string, body any, want int) map[string]any {
	a.t.Helper()
	var in io.Reader
	contentType := ""
	if body != nil {
		raw, err := json.Marshal(body)
		require.NoError(a.t, err)
		in, contentType = bytes.NewReader(raw), "application/json"
	}
	return a.object(a.send(method, path, token, contentType, in, want))
}

// raw sends body as it is, under contentType.
func (a flowAPI) raw(method, path, token, contentType, body string, want int) map[string]any {
	a.t.Helper()
	return a.object(a.send(method, path, token, contentType, strings.NewReader(body), want))
}

// list is a GET whose answer is a list: a JSON array, or the one array an
// object holds.
func (a flowAPI) list(method, path, token string) []any {
	a.t.Helper()
	raw := a.send(method, path, token, "", nil, 200)
	var v any
	require.NoError(a.t, json.Unmarshal(raw, &v))
	if obj, ok := v.(map[string]any); ok {
		for _, f := range obj {
			if arr, ok := f.([]any); ok {
				return arr
			}
		}
	}
	arr, ok := v.([]any)
	require.True(a.t, ok, "%s %s answers a list: %s", method, path, raw)
	return arr
}

// upload posts a file to a task as multipart/form-data and returns its id.
func (a flowAPI) upload(path, token, name, content string) string {
	a.t.Helper()
	var body bytes.Buffer
	w := multipart.NewWriter(&body)
	part, err := w.CreateFormFile("file", name)
	require.NoError(a.t, err)
	_, err = part.Write([]byte(content))
	require.NoError(a.t, err)
	require.NoError(a.t, w.Close())
	return a.object(a.send("POST", path, token, w.FormDataContentType(), &body, 201))["file_id"].(string)
}

func (a flowAPI) object(raw []byte) map[string]any {
	a.t.Helper()
	var v map[string]any
	require.NoError(a.t, json.Unmarshal(raw, &v), "%s", raw)
	return v
}

// waitStatus waits until the task has status (the resume runs on the worker).
func (a flowAPI) waitStatus(task, token, status string) {
	a.t.Helper()
	require.Eventually(a.t, func() bool {
		return a.do("GET", "/api/agent/tasks/"+task, token, nil, 200)["status"] == status
	}, 60*time.Second, 100*time.Millisecond, "task %s becomes %s", task, status)
}

// chatModel is a loopback OpenAI-compatible chat-completions server that
// answers every request with one JSON document as the message content.
type chatModel struct {
	*httptest.Server
	mu    sync.Mutex
	count int
}

func newChatModel(t *testing.T, answer string) *chatModel {
	t.Helper()
	m := &chatModel{}
	m.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var req struct {
			Model          string            `json:"model"`
			Messages       []json.RawMessage `json:"messages"`
			ResponseFormat json.RawMessage   `json:"response_format"`
		}
		if r.URL.Path != "/v1/chat/completions" || r.Method != "POST" || r.Header.Get("Authorization") != "Bearer stand-in" ||
			json.NewDecoder(r.Body).Decode(&req) != nil || len(req.Messages) == 0 {
			http.Error(w, `{"error": {"message": "not a chat completion"}}`, 400)
			return
		}
		m.mu.Lock()
		m.count++
		m.mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]any{
			"id": "chatcmpl-1", "object": "chat.completion", "created": time.Now().Unix(), "model": req.Model,
			"choices": []any{map[string]any{"index": 0, "finish_reason": "stop",
				"message": map[string]any{"role": "assistant", "content": answer}}},
			"usage": map[string]any{"prompt_tokens": 10, "completion_tokens": 10, "total_tokens": 20},
		})
	}))
	t.Cleanup(m.Close)
	return m
}

func (m *chatModel) calls() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.count
}

// webhookReceiver is an agent platform's resume endpoint on loopback: it
// keeps every delivery whose Standard Webhooks signature verifies.
type webhookReceiver struct {
	*httptest.Server
	secret string // whsec_…
	mu     sync.Mutex
	events []map[string]any
	bad    []string
}

func newWebhookReceiver(t *testing.T) *webhookReceiver {
	t.Helper()
	h := &webhookReceiver{}
	h.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		h.mu.Lock()
		defer h.mu.Unlock()
		if !h.verify(r.Header, body) {
			h.bad = append(h.bad, string(body))
			http.Error(w, "bad signature", 400)
			return
		}
		var event map[string]any
		if json.Unmarshal(body, &event) != nil {
			h.bad = append(h.bad, string(body))
			return
		}
		h.events = append(h.events, event)
	}))
	t.Cleanup(h.Close)
	return h
}

// verify checks a delivery the Standard Webhooks way.
func (h *webhookReceiver) verify(header http.Header, body []byte) bool {
	key, err := base64.StdEncoding.DecodeString(strings.TrimPrefix(h.secret, "whsec_"))
	if err != nil || len(key) == 0 {
		return false
	}
	mac := hmac.New(sha256.New, key)
	mac.Write([]byte(header.Get("webhook-id") + "." + header.Get("webhook-timestamp") + "."))
	mac.Write(body)
	want := "v1," + base64.StdEncoding.EncodeToString(mac.Sum(nil))
	for _, sig := range strings.Fields(header.Get("webhook-signature")) {
		if hmac.Equal([]byte(sig), []byte(want)) {
			return true
		}
	}
	return false
}

// await waits for a new delivery that resumed task (task.resumed,
// task.released or task.expired) and returns it.
func (h *webhookReceiver) await(t *testing.T, task string) map[string]any {
	t.Helper()
	var got map[string]any
	require.Eventually(t, func() bool {
		h.mu.Lock()
		defer h.mu.Unlock()
		for i, e := range h.events {
			// task.released and task.expired resume the task too (docs/agent-platforms.md#webhook-event-catalogue)
			if typ := e["type"]; e["task_id"] == task && (typ == "task.resumed" || typ == "task.released" || typ == "task.expired") {
				got = e
				h.events = append(h.events[:i:i], h.events[i+1:]...)
				return true
			}
		}
		return false
	}, 60*time.Second, 50*time.Millisecond, "a signed resume webhook for task %s", task)
	h.mu.Lock()
	defer h.mu.Unlock()
	require.Empty(t, h.bad, "every delivery verifies")
	return got
}

// newToolTarget is the endpoint of an agent tool's url target: /card
// answers a pending-input card whose button, without a target, is its own
// result.
func newToolTarget(t *testing.T) *httptest.Server {
	t.Helper()
	s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/card" {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"type": "pending_input", "title": "Pay the invoice?", "description": "ACME, 1234.50",
			"elements": [{"type": "button", "id": "pay", "label": "Pay now", "input": {"paid": true}},
			             {"type": "button", "id": "hold", "label": "Hold", "input": "held"}]}`)
	}))
	t.Cleanup(s.Close)
	return s
}

// consoleSession is a signed-in console client.
type consoleSession struct {
	base   string
	client *http.Client
}

// signIn signs in to the console with the login form.
func signIn(t *testing.T, base, email, password string) consoleSession {
	t.Helper()
	jar, err := cookiejar.New(nil)
	require.NoError(t, err)
	s := consoleSession{base: base, client: &http.Client{Jar: jar, Timeout: 30 * time.Second}}
	_, login := s.get(t, "/login")
	m := csrfInput.FindStringSubmatch(login)
	require.NotNil(t, m, "the login form carries a csrf field")
	res, err := s.client.PostForm(base+"/login", url.Values{"csrf": {m[1]}, "email": {email}, "password": {password}, "next": {"/"}})
	require.NoError(t, err)
	res.Body.Close()
	require.Equal(t, 200, res.StatusCode)
	require.NotContains(t, res.Request.URL.Path, "/login", "signed in")
	return s
}

// post sends a console form with the page's csrf token; the answer, after
// its redirect, must be 200.
func (s consoleSession) post(t *testing.T, path string, form url.Values) {
	t.Helper()
	status, body := s.postStatus(t, path, form)
	require.Equal(t, 200, status, "POST %s\n%s", path, body)
}

// postStatus posts form to path with the page's CSRF token and returns the
// status and body after redirects.
func (s consoleSession) postStatus(t *testing.T, path string, form url.Values) (int, string) {
	t.Helper()
	_, page := s.get(t, "/")
	m := csrfInput.FindStringSubmatch(page)
	require.NotNil(t, m, "a signed-in page carries a csrf field")
	form.Set("csrf", m[1])
	res, err := s.client.PostForm(s.base+path, form)
	require.NoError(t, err)
	raw, _ := io.ReadAll(res.Body)
	res.Body.Close()
	return res.StatusCode, string(raw)
}

func (s consoleSession) get(t *testing.T, path string) (int, string) {
	t.Helper()
	res, err := s.client.Get(s.base + path)
	require.NoError(t, err)
	defer res.Body.Close()
	raw, err := io.ReadAll(res.Body)
	require.NoError(t, err)
	return res.StatusCode, string(raw)
}
