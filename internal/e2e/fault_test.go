package e2e_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/appruntime/appruntime/internal/outbox"
	"github.com/appruntime/appruntime/internal/store"
	"github.com/appruntime/appruntime/internal/testkit"
	"github.com/appruntime/appruntime/models"
)

// The fault tests run the product as a deployment does, as separate
// `appruntime api` and `appruntime worker` processes on the real Postgres
// and Redis, kill them with SIGKILL at chosen moments, start them again, and
// check what survived. The moments are chosen by what the test observes
// (writes acknowledged, requests arrived at the webhook receiver, outbox
// rows relayed), never by sleeping, and every wait is a bounded poll.

// recovery bounds the waits after a restart. A job the killed worker was
// running is handed out again by asynq only once its lease expired (30 s)
// and a recoverer pass saw it (every minute): about 60 to 90 s.
const recovery = 150 * time.Second

var (
	binaryOnce sync.Once
	binaryPath string
	binaryErr  error
)

// appruntimeBinary builds cmd/appruntime once per test binary.
func appruntimeBinary(t *testing.T) string {
	t.Helper()
	binaryOnce.Do(func() {
		dir, err := os.MkdirTemp("", "appruntime-fault")
		if err != nil {
			binaryErr = err
			return
		}
		binaryPath = filepath.Join(dir, "appruntime")
		out, err := exec.Command("go", "build", "-o", binaryPath, "github.com/appruntime/appruntime/cmd/appruntime").CombinedOutput()
		if err != nil {
			binaryErr = fmt.Errorf("build appruntime: %v\n%s", err, out)
		}
	})
	require.NoError(t, binaryErr)
	return binaryPath
}

// child is a running appruntime process.
type child struct {
	name   string
	cmd    *exec.Cmd
	output *testkit.SyncBuffer
	done   chan struct{}
}

// faultStack is one deployment run as processes: its platform schema, its
// Redis prefix and queues, the environment every process gets, and the
// tenant the test acts as.
type faultStack struct {
	env     []string
	apiAddr string
	apiURL  string
	store   *store.Store // the platform database, for the checks
	redis   testkit.RedisEnv
	source  *store.Store // the data source
	tenant  testkit.Tenant
	api     *child
	worker  *child
}

func newFaultStack(t *testing.T) *faultStack {
	t.Helper()
	if testing.Short() {
		t.Skip("runs the product as processes")
	}
	appruntimeBinary(t)
	st := testkit.Schema(t)
	rd := testkit.Redis(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := ln.Addr().String()
	require.NoError(t, ln.Close())
	fs := &faultStack{apiAddr: addr, apiURL: "http://" + addr, store: st, redis: rd, source: testkit.DataSource(t), tenant: testkit.NewTenant(t, st.DB)}
	fs.env = []string{
		"PATH=" + os.Getenv("PATH"), "HOME=" + os.Getenv("HOME"),
		"DATABASE_URL=" + testkit.URLOf(st), "REDIS_URL=" + testkit.RedisURL(), "REDIS_KEY_PREFIX=" + rd.Prefix,
		"SECRETS_KEY=" + testkit.TestKeyBase64, "SESSION_KEYS=test:" + testkit.TestKeyBase64,
		"API_ADDR=" + addr, "PUBLIC_API_URL=" + fs.apiURL, "OUTBOUND_ALLOW_CIDRS=127.0.0.0/8", "DATASOURCE_ALLOW_CIDRS=127.0.0.0/8,::1/128",
		"LOG_LEVEL=warn", "SHUTDOWN_TIMEOUT=2s",
	}
	return fs
}

// start runs `appruntime <command>` with the stack's environment and env
// added, and, for the api, waits until it is ready.
func (fs *faultStack) start(t *testing.T, command string, env ...string) *child {
	t.Helper()
	c := &child{name: command, cmd: exec.Command(appruntimeBinary(t), command), output: &testkit.SyncBuffer{}, done: make(chan struct{})}
	c.cmd.Env = append(append([]string(nil), fs.env...), env...)
	c.cmd.Stdout, c.cmd.Stderr = c.output, c.output
	require.NoError(t, c.cmd.Start())
	go func() { _ = c.cmd.Wait(); close(c.done) }()
	t.Cleanup(func() {
		c.kill()
		if t.Failed() {
			t.Logf("%s output:\n%s", c.name, c.output.String())
		}
	})
	if command == "api" {
		fs.api = c
		require.Eventually(t, func() bool {
			res, err := http.Get(fs.apiURL + "/readyz")
			if err != nil {
				return false
			}
			res.Body.Close()
			return res.StatusCode == 200
		}, eventually, poll, "the api answers /readyz")
	} else {
		fs.worker = c
	}
	return c
}

// kill sends SIGKILL and waits for the process to be gone.
func (c *child) kill() {
	select {
	case <-c.done:
		return
	default:
	}
	_ = c.cmd.Process.Signal(syscall.SIGKILL)
	<-c.done
}

// call sends a JSON request to the api process.
func (fs *faultStack) call(method, path, token string, body any) (reply, error) {
	return (&stack{URL: fs.apiURL}).send(method, path, token, body)
}

func (fs *faultStack) must(t *testing.T, want int, method, path, token string, body any, contentType ...string) map[string]any {
	t.Helper()
	return (&stack{URL: fs.apiURL}).must(t, want, method, path, token, body, contentType...)
}

// faultBinding writes entries (one row per write, its ref unique) and
// approves a review, which records a decision and releases the await.
var faultBinding = map[string]any{
	"writes": []any{
		map[string]any{"op": "add_entry", "table": "entries", "mode": "insert", "columns": []string{"ref"},
			"fixed_values": map[string]any{"task_id": "{{task_id}}"}},
		map[string]any{"op": "record_decision", "table": "decisions", "mode": "insert", "columns": []string{"decision"},
			"fixed_values": map[string]any{"task_id": "{{task_id}}"}},
	},
	"actions": []any{
		map[string]any{"name": "approve", "writes": []string{"record_decision"}, "resolves_await": true},
		map[string]any{"name": "note", "writes": []string{"record_decision"}},
	},
}

// setUpTool creates the data source, its integration and binding, a bundle
// and an app tool of agentID (parking its tasks when awaitReview), through
// the api process; it returns the tool id.
func (fs *faultStack) setUpTool(t *testing.T, agentID string, awaitReview bool) string {
	t.Helper()
	for _, q := range []string{
		`CREATE TABLE entries (ref text PRIMARY KEY, task_id text NOT NULL)`,
		`CREATE TABLE decisions (id serial PRIMARY KEY, task_id text NOT NULL, decision text NOT NULL)`,
	} {
		require.NoError(t, fs.source.DB.Exec(q).Error)
	}
	admin := fs.tenant.AdminToken
	integ := fs.must(t, 201, "POST", "/api/admin/integrations", admin, map[string]any{
		"name": "Entries database", "kind": "postgres", "secrets": map[string]any{"dsn": testkit.URLOf(fs.source)},
	})
	b := fs.must(t, 201, "POST", "/api/admin/bindings", admin, map[string]any{
		"name": "Entries", "binding_kind": "postgres", "integration_id": integ["id"], "allowed_operations": faultBinding,
	})
	bundle := fs.must(t, 201, "POST", "/api/admin/bundles?name=fault", admin, []byte(bundleHTML), "text/html")
	tool := fs.must(t, 201, "POST", "/api/admin/configured-tools", admin, map[string]any{
		"agent_id": agentID, "display_name": "Fault review", "base_tool": "app_tool",
		"bundle_id": bundle["id"], "binding_id": b["id"], "await_review": awaitReview,
	})
	return tool["id"].(string)
}

// appStep creates a task of the agent with one app-tool step and mints a
// session on it; it returns the task id and the session token.
func (fs *faultStack) appStep(t *testing.T, agentToken, toolID string) (taskID, session string) {
	t.Helper()
	task := fs.must(t, 201, "POST", "/api/agent/tasks", agentToken, map[string]any{"title": "fault"})
	step := fs.must(t, 201, "POST", "/api/agent/tasks/"+task["id"].(string)+"/steps", agentToken,
		map[string]any{"configured_tool_id": toolID, "params": map[string]any{}})
	d := fs.must(t, 201, "POST", "/api/app-tools/sessions", fs.tenant.HostToken, map[string]any{"step_id": step["id"]})
	return task["id"].(string), d["session_token"].(string)
}

func TestAKilledProcessLosesNoRecordAndDoublesNoResume(t *testing.T) {
	t.Parallel()
	t.Run("api killed during a write burst", testAPIKilledDuringAWriteBurst)
	t.Run("worker killed during resumes and webhook deliveries", testWorkerKilledDuringResumesAndWebhooks)
}

// testAPIKilledDuringAWriteBurst kills the api with SIGKILL while sixteen
// writers hammer /write (and four more /action), starts it again, and checks
// that every row in the data source has its agent_action feed row or, for
// the writes the kill cut off, an agent_action_unknown one; that no feed row
// claims a row that is not there; and that every acknowledged write is in
// the data source. An action's feed row names no row, so its decisions are
// counted: at least as many as its recorded actions, at most as many as
// those and its unknown ones together.
func testAPIKilledDuringAWriteBurst(t *testing.T) {
	t.Parallel()
	fs := newFaultStack(t)
	fs.start(t, "api")
	toolID := fs.setUpTool(t, fs.tenant.Agent.ID, false)
	taskID, session := fs.appStep(t, fs.tenant.AgentToken, toolID)

	const writers, actors, killAfter = 16, 4, 200
	var acked sync.Map // ref → true, for the writes answered 200
	var nAcked, actionsAcked atomic.Int64
	killed := make(chan struct{})
	var once sync.Once
	var wg sync.WaitGroup
	for a := range actors {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; ; i++ {
				r, err := fs.call("POST", "/api/app-runtime/action", session, map[string]any{"op": "note",
					"payload": map[string]any{"rows": map[string]any{"record_decision": map[string]any{"decision": fmt.Sprintf("a%d-%05d", a, i)}}}})
				if err != nil {
					return // the api is gone
				}
				if r.Status == 429 {
					time.Sleep(50 * time.Millisecond) // the surface's rate limit
					continue
				}
				if r.Status != 200 {
					t.Errorf("action %d-%d: %d %s", a, i, r.Status, r.Raw)
					return
				}
				actionsAcked.Add(1)
			}
		}()
	}
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; ; i++ {
				ref := fmt.Sprintf("w%02d-%05d", w, i)
				r, err := fs.call("POST", "/api/app-runtime/write", session,
					map[string]any{"op": "add_entry", "payload": map[string]any{"row": map[string]any{"ref": ref}}})
				if err != nil {
					return // the api is gone
				}
				if r.Status != 200 {
					t.Errorf("write %s: %d %s", ref, r.Status, r.Raw)
					once.Do(func() { fs.api.kill(); close(killed) })
					return
				}
				acked.Store(ref, true)
				if nAcked.Add(1) == killAfter {
					once.Do(func() { fs.api.kill(); close(killed) })
				}
			}
		}()
	}
	<-killed
	wg.Wait()
	t.Logf("api killed after %d acknowledged writes", nAcked.Load())

	fs.start(t, "api")    // its start-up sweep records what the dead one left,
	fs.start(t, "worker") // and so do the worker's periodic ones
	require.Eventually(t, func() bool {
		var n int64
		require.NoError(t, fs.store.DB.Model(&models.WriteIntentBatch{}).Count(&n).Error)
		return n == 0
	}, recovery, poll, "every write intent the killed api left is resolved")

	var rows []string
	require.NoError(t, fs.source.DB.Raw("SELECT ref FROM entries").Scan(&rows).Error)
	inSource := map[string]bool{}
	for _, ref := range rows {
		inSource[ref] = true
	}
	recorded, unknown := feedRefs(t, fs.store, taskID)
	for ref := range inSource {
		require.True(t, recorded[ref] || unknown[ref], "row %s is in the data source with no feed row", ref)
	}
	for ref := range recorded {
		require.True(t, inSource[ref], "feed row for %s, which the data source does not have", ref)
		require.False(t, unknown[ref], "%s is recorded both ways", ref)
	}
	acked.Range(func(k, _ any) bool {
		require.True(t, inSource[k.(string)], "acknowledged write %s is not in the data source", k)
		return true
	})
	t.Logf("%d rows in the data source, %d agent_action feed rows, %d outcome unknown", len(inSource), len(recorded), len(unknown))

	var decisions int64
	require.NoError(t, fs.source.DB.Raw("SELECT count(*) FROM decisions").Scan(&decisions).Error)
	actions, unknownActions := actionCounts(t, fs.store, taskID)
	require.GreaterOrEqual(t, decisions, actions, "every recorded action wrote its decision")
	require.LessOrEqual(t, decisions, actions+unknownActions, "every decision has its action's feed row or an unknown one")
	require.GreaterOrEqual(t, actions, actionsAcked.Load(), "every acknowledged action is recorded")
	t.Logf("%d decisions, %d actions recorded, %d outcome unknown", decisions, actions, unknownActions)

	// The restarted api writes as before.
	r, err := fs.call("POST", "/api/app-runtime/write", session,
		map[string]any{"op": "add_entry", "payload": map[string]any{"row": map[string]any{"ref": "after-restart"}}})
	require.NoError(t, err)
	require.Equal(t, 200, r.Status, string(r.Raw))
}

// actionCounts returns the task's agent_action rows of actions, and its
// agent_action_unknown rows of actions.
func actionCounts(t *testing.T, st *store.Store, taskID string) (recorded, unknown int64) {
	t.Helper()
	var events []models.FeedEvent
	require.NoError(t, st.DB.Where("task_id = ? AND type IN ?", taskID,
		[]string{models.FeedAgentAction, models.FeedAgentActionUnknown}).Find(&events).Error)
	for _, e := range events {
		var p struct {
			Verb     string `json:"verb"`
			Intended struct {
				Verb string `json:"verb"`
			} `json:"intended"`
		}
		require.NoError(t, json.Unmarshal(e.Payload, &p))
		switch {
		case e.Type == models.FeedAgentAction && p.Verb == "action":
			recorded++
		case e.Type == models.FeedAgentActionUnknown && p.Intended.Verb == "action":
			unknown++
		}
	}
	return recorded, unknown
}

// feedRefs returns the refs the task's agent_action rows record, and those
// its agent_action_unknown rows say may have been written.
func feedRefs(t *testing.T, st *store.Store, taskID string) (recorded, unknown map[string]bool) {
	t.Helper()
	var events []models.FeedEvent
	require.NoError(t, st.DB.Where("task_id = ? AND type IN ?", taskID,
		[]string{models.FeedAgentAction, models.FeedAgentActionUnknown}).Find(&events).Error)
	recorded, unknown = map[string]bool{}, map[string]bool{}
	for _, e := range events {
		var p struct {
			Verb     string         `json:"verb"`
			Row      map[string]any `json:"row"`
			Intended struct {
				Verb string         `json:"verb"`
				Row  map[string]any `json:"row"`
			} `json:"intended"`
		}
		require.NoError(t, json.Unmarshal(e.Payload, &p))
		switch {
		case e.Type == models.FeedAgentAction && p.Verb == "write":
			recorded[p.Row["ref"].(string)] = true
		case e.Type == models.FeedAgentActionUnknown && p.Intended.Verb == "write":
			unknown[p.Intended.Row["ref"].(string)] = true
		}
	}
	return recorded, unknown
}

// stallingReceiver is a webhook receiver that counts the requests of each
// event and, until released, holds them unanswered.
type stallingReceiver struct {
	URL string

	mu       sync.Mutex
	received map[string]int // event id → requests
	answered map[string]int // event id → 2xx answers sent
	stalled  int
	release  chan struct{}
}

func newStallingReceiver(t *testing.T) *stallingReceiver {
	t.Helper()
	r := &stallingReceiver{received: map[string]int{}, answered: map[string]int{}, release: make(chan struct{})}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		body, err := io.ReadAll(req.Body)
		var ev struct {
			ID string `json:"id"`
		}
		if err != nil || json.Unmarshal(body, &ev) != nil || ev.ID == "" {
			http.Error(w, "not an event", http.StatusBadRequest)
			return
		}
		r.mu.Lock()
		r.received[ev.ID]++
		release := r.release
		r.mu.Unlock()
		select {
		case <-release:
		default:
			r.mu.Lock()
			r.stalled++
			r.mu.Unlock()
			select {
			case <-release:
			case <-req.Context().Done():
			}
			// A held request's sender is the killed worker, whether or not
			// the server has noticed its connection close yet: the answer
			// reaches no one, so it is not counted as answered.
			w.WriteHeader(http.StatusNoContent)
			return
		}
		r.mu.Lock()
		r.answered[ev.ID]++
		r.mu.Unlock()
		w.WriteHeader(http.StatusNoContent)
	}))
	t.Cleanup(srv.Close)
	r.URL = srv.URL + "/hooks"
	return r
}

func (r *stallingReceiver) stalledCount() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.stalled
}

func (r *stallingReceiver) counts() (received, answered map[string]int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	received, answered = map[string]int{}, map[string]int{}
	for k, v := range r.received {
		received[k] = v
	}
	for k, v := range r.answered {
		answered[k] = v
	}
	return received, answered
}

// testWorkerKilledDuringResumesAndWebhooks runs a worker with two job slots
// against a receiver that holds every request: once both slots hang in a
// webhook POST, a second wave of approvals is relayed and its resume jobs
// wait in the queue. The worker is killed there, the receiver let go and a
// worker started again; every task must be resumed exactly once, every
// event delivered, and every request the receiver got recorded as an
// attempt.
func testWorkerKilledDuringResumesAndWebhooks(t *testing.T) {
	t.Parallel()
	fs := newFaultStack(t)
	hook := newStallingReceiver(t)
	fs.start(t, "api")
	admin := fs.tenant.AdminToken
	agent := fs.must(t, 201, "POST", "/api/admin/agents", admin, map[string]any{"name": "Fault agent", "resume_webhook_url": hook.URL})
	agentToken := fs.must(t, 201, "POST", "/api/admin/tokens", admin, map[string]any{
		"scope": "agent", "name": "fault agent", "agent_id": agent["id"]})["token"].(string)
	toolID := fs.setUpTool(t, agent["id"].(string), true)

	const perWave = 6
	type parked struct{ taskID, session string }
	var waves [2][]parked
	for w := range waves {
		for range perWave {
			taskID, session := fs.appStep(t, agentToken, toolID)
			waves[w] = append(waves[w], parked{taskID, session})
		}
	}
	approve := func(p parked) {
		r := fs.must(t, 200, "POST", "/api/app-runtime/action", p.session,
			map[string]any{"op": "approve", "payload": map[string]any{"rows": map[string]any{"record_decision": map[string]any{"decision": "ok"}}}})
		require.Equal(t, true, r["results"].(map[string]any)["await_resolved"])
	}

	fs.start(t, "worker", "WORKER_CONCURRENCY=2")
	for _, p := range waves[0] {
		approve(p)
	}
	require.Eventually(t, func() bool { return hook.stalledCount() >= 2 }, eventually, poll,
		"both job slots hang in a webhook POST")
	for _, p := range waves[1] {
		approve(p)
	}
	require.Eventually(t, func() bool {
		var unsent int64
		require.NoError(t, fs.store.DB.Model(&models.Outbox{}).Where("kind = ? AND sent_at IS NULL", outbox.KindResumeEvent).Count(&unsent).Error)
		return unsent == 0
	}, eventually, poll, "the second wave's resume events are queued")

	fs.worker.kill()
	pending := 0
	for _, p := range waves[1] {
		if taskStatusOf(t, fs.store, p.taskID) == models.TaskWaitingForInput {
			pending++
		}
	}
	received, _ := hook.counts()
	t.Logf("worker killed with %d webhook requests held and %d of %d resumes still queued", len(received), pending, perWave)
	requireAttemptsRecorded(t, fs.store, received)

	close(hook.release)
	fs.start(t, "worker")

	var events []string
	require.NoError(t, fs.store.DB.Model(&models.Outbox{}).Where("kind = ?", outbox.KindResumeEvent).Pluck("id", &events).Error)
	require.Len(t, events, 2*perWave)
	require.Eventually(t, func() bool {
		_, answered := hook.counts()
		for _, id := range events {
			if answered[id] == 0 {
				return false
			}
		}
		return true
	}, recovery, poll, "every resume event reaches the webhook")
	for _, wave := range waves {
		for _, p := range wave {
			require.Equal(t, models.TaskRunning, taskStatusOf(t, fs.store, p.taskID))
			var resumed int64
			require.NoError(t, fs.store.DB.Model(&models.FeedEvent{}).Where("task_id = ? AND type = ?", p.taskID, models.FeedTaskResumed).Count(&resumed).Error)
			require.EqualValues(t, 1, resumed, "task %s resumed exactly once", p.taskID)
		}
	}
	received, answered := hook.counts()
	requireAttemptsRecorded(t, fs.store, received)
	// The worker records a 2xx once it has read it, a moment after the
	// receiver counted it: wait for the records, then hold them exact.
	delivered := func(id string) int64 {
		var ok int64
		require.NoError(t, fs.store.DB.Model(&models.WebhookDelivery{}).
			Where("event_id = ? AND status_code BETWEEN 200 AND 299 AND finished_at IS NOT NULL", id).Count(&ok).Error)
		return ok
	}
	require.Eventually(t, func() bool {
		for _, id := range events {
			if delivered(id) < int64(answered[id]) {
				return false
			}
		}
		return true
	}, eventually, poll, "every 2xx the receiver sent is recorded")
	for _, id := range events {
		require.EqualValues(t, answered[id], delivered(id), "event %s: every 2xx the receiver sent is recorded", id)
		require.EqualValues(t, 1, delivered(id), "event %s is delivered once", id)
	}
}

// requireAttemptsRecorded checks that each request the receiver got is a
// recorded delivery attempt: no event has more requests than attempts.
func requireAttemptsRecorded(t *testing.T, st *store.Store, received map[string]int) {
	t.Helper()
	for id, n := range received {
		var attempts int64
		require.NoError(t, st.DB.Model(&models.WebhookDelivery{}).Where("event_id = ?", id).Count(&attempts).Error)
		require.GreaterOrEqual(t, attempts, int64(n), "event %s: %d requests received, %d attempts recorded", id, n, attempts)
	}
}

func taskStatusOf(t *testing.T, st *store.Store, taskID string) string {
	t.Helper()
	var task models.Task
	require.NoError(t, st.DB.WithContext(context.Background()).Select("status").Take(&task, "id = ?", taskID).Error)
	return task.Status
}
