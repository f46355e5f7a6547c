package e2e_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hibiken/asynq"
	"github.com/stretchr/testify/require"

	"github.com/appruntime/appruntime/api"
	"github.com/appruntime/appruntime/internal/bindingspec"
	"github.com/appruntime/appruntime/internal/config"
	"github.com/appruntime/appruntime/internal/datasource"
	"github.com/appruntime/appruntime/internal/document/documenttest"
	"github.com/appruntime/appruntime/internal/limit"
	"github.com/appruntime/appruntime/internal/logging"
	"github.com/appruntime/appruntime/internal/platform"
	"github.com/appruntime/appruntime/internal/store"
	"github.com/appruntime/appruntime/internal/testkit"
	"github.com/appruntime/appruntime/internal/web"
	"github.com/appruntime/appruntime/models"
)

// runStack is a deployment whose worker runs /run's tools: a translation
// engine and an extraction model are loopback stand-ins speaking their
// real protocols; python runs under the host's bwrap.
type runStack struct {
	*stack
	tenant  testkit.Tenant
	model   *standInModel
	engine  *standInEngine
	taskID  string
	stepID  string
	token   string
	toolIDs map[string]string // display name → id
	// pythonDeadline is a python run's deadline (nanoseconds); 3 s unless
	// a test sets it before its first run.
	pythonDeadline atomic.Int64
}

// runBinding grants one op per executor.
var runBinding = bindingspec.Spec{
	Tools: []bindingspec.Tool{
		{Op: "double", Tool: "Double", Params: []string{"x"}},
		{Op: "raise", Tool: "Raiser"},
		{Op: "sleep", Tool: "Sleeper"},
		{Op: "dial", Tool: "Dialer", Params: []string{"port"}},
		{Op: "vendor", Tool: "Vendors", Params: []string{"match_criteria", "return_columns"}},
		{Op: "vendor_quiet", Tool: "Vendors", Params: []string{"match_criteria", "return_columns"}, Record: ptr(false)},
		{Op: "invoice", Tool: "Invoice query", Params: []string{"args"}},
		{Op: "translate", Tool: "translate_text", Params: []string{"texts", "target_language"}},
		{Op: "translate_quiet", Tool: "translate_text", Params: []string{"texts", "target_language"}, Record: ptr(false)},
		{Op: "reparse", Tool: "Reparse", Params: []string{"file_url"}},
		{Op: "gone", Tool: "Gone"},
	},
}

func ptr[T any](v T) *T { return &v }

func newRunStack(t *testing.T, opts ...func(*config.Config)) *runStack {
	t.Helper()
	return newRunStackOn(t, testkit.Schema(t), testkit.Redis(t), true, opts...)
}

// newRunStackOn is newRunStack on a given schema and Redis environment; with
// inProcessWorker false, no worker runs in the test's process (a test starts
// `appruntime worker` processes instead).
func newRunStackOn(t *testing.T, st *store.Store, rd testkit.RedisEnv, inProcessWorker bool, opts ...func(*config.Config)) *runStack {
	t.Helper()
	rs := &runStack{model: newStandInModel(t), engine: newStandInEngine(t), toolIDs: map[string]string{}}
	rs.pythonDeadline.Store(int64(3 * time.Second))
	ln, err := web.Listen("127.0.0.1:0")
	require.NoError(t, err)
	rs.stack = &stack{URL: "http://" + ln.Addr().String(), Store: st, Redis: rd}
	cfg := testkit.Config(testkit.DatabaseURL(), testkit.RedisURL())
	cfg.PublicAPIURL, cfg.BundleBaseURL = rs.URL, rs.URL+"/bundles"
	cfg.TaskCheckInterval = config.DefaultTaskCheckInterval
	cfg.Tools.TranslateURL = rs.engine.URL
	cfg.Tools.ExtractionBaseURL, cfg.Tools.ExtractionModel = rs.model.URL+"/v1", "stand-in"
	for _, o := range opts {
		o(cfg)
	}
	log := logging.New(io.Discard, slog.LevelError)
	if testing.Verbose() {
		log = logging.New(testWriter{t}, slog.LevelInfo)
	}
	p, err := platform.New(context.Background(), platform.Options{
		Config: cfg, Log: log, Store: st, Redis: rd.Client, KeyPrefix: rd.Prefix, Queues: rd.Queues,
	})
	require.NoError(t, err)
	t.Cleanup(p.Close)
	p.Limiter.SetRate(limit.Rate{PerSecond: 10000, Burst: 10000})
	p.Runtime.RunDeadlineFunc = func(base string) time.Duration {
		if base == models.BasePythonCode {
			return time.Duration(rs.pythonDeadline.Load()) // the sleeper outlives it
		}
		return 30 * time.Second
	}
	rs.P = p
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- web.Serve(ctx, api.New(p.APIServices()), ln, 2*time.Second) }()
	t.Cleanup(func() { cancel(); require.NoError(t, ignoreCanceled(<-done)) })
	if inProcessWorker {
		startWorker(t, p)
	}
	rs.setUp(t)
	return rs
}

// setUp makes the tenant, the tools, a task with an app-tool step on the
// binding, and a session on it.
func (rs *runStack) setUp(t *testing.T) {
	ctx := context.Background()
	db := rs.Store.DB
	rs.tenant = testkit.NewTenant(t, db)
	ws, agent := rs.tenant.Workspace.ID, rs.tenant.Agent.ID
	require.NoError(t, db.Model(&models.Agent{}).Where("id = ?", agent).Update("document_translation_enabled", true).Error)

	source := testkit.DataSource(t)
	require.NoError(t, source.DB.Exec(`CREATE TABLE invoices (id integer PRIMARY KEY, vendor text NOT NULL)`).Error)
	require.NoError(t, source.DB.Exec(`INSERT INTO invoices VALUES (1, 'ACME'), (2, 'Globex')`).Error)
	secrets, err := rs.P.Secrets.SealJSON(datasource.Secrets{DSN: testkit.URLOf(source)})
	require.NoError(t, err)
	integ := models.Integration{ID: models.NewID(), WorkspaceID: ws, Name: "invoices", Kind: "postgres", SecretsEnc: secrets}
	require.NoError(t, db.Create(&integ).Error)

	tools := []models.ConfiguredTool{
		{DisplayName: "Double", BaseTool: models.BasePythonCode, Config: models.MustJSON(map[string]any{"code": "def main(input):\n    return {'y': input['x'] * 2, 'task': input['task_id']}\n"})},
		{DisplayName: "Raiser", BaseTool: models.BasePythonCode, Config: models.MustJSON(map[string]any{"code": "def main(input):\n    raise ValueError('no such invoice')\n"})},
		{DisplayName: "Sleeper", BaseTool: models.BasePythonCode, Config: models.MustJSON(map[string]any{"code": "import os, time\ndef main(input):\n    os.fork()\n    time.sleep(120)\n"})},
		{DisplayName: "Dialer", BaseTool: models.BasePythonCode, Config: models.MustJSON(map[string]any{"code": "import socket\ndef main(input):\n    socket.create_connection(('127.0.0.1', input['port']), 2).close()\n    return 'connected'\n"})},
		{DisplayName: "Vendors", BaseTool: models.BaseCSVLookup, Config: models.MustJSON(map[string]any{"file_name": "vendors.csv"})},
		{DisplayName: "Invoice query", BaseTool: models.BasePostgresQuery, IntegrationID: &integ.ID, Config: models.MustJSON(map[string]any{"query": "SELECT vendor FROM invoices WHERE id = $1"})},
		{DisplayName: "Gone", BaseTool: models.BasePythonCode, Config: models.MustJSON(map[string]any{"code": "def main(input):\n    return 1\n"})},
		{DisplayName: "Reparse", BaseTool: models.BaseExtraction, Config: models.MustJSON(map[string]any{
			"instructions": "Read the total.", "output_schema": map[string]any{"type": "object", "properties": map[string]any{"total": map[string]any{"type": "number"}}, "required": []string{"total"}},
		})},
	}
	for i := range tools {
		tools[i].ID, tools[i].WorkspaceID, tools[i].AgentID = models.NewID(), ws, agent
		require.NoError(t, db.Create(&tools[i]).Error)
		rs.toolIDs[tools[i].DisplayName] = tools[i].ID
	}
	spec, err := json.Marshal(runBinding)
	require.NoError(t, err)
	b, err := rs.P.Bindings.Create(ctx, ws, "test", bindingspec.Input{Name: "runs", BindingKind: bindingspec.KindPostgres, IntegrationID: integ.ID, AllowedOperations: spec})
	require.NoError(t, err)

	// A tool the binding named when it was saved, deleted since.
	require.NoError(t, db.Delete(&models.ConfiguredTool{}, "id = ?", rs.toolIDs["Gone"]).Error)
	bundleID := models.NewID()
	require.NoError(t, db.Create(&models.Bundle{ID: bundleID, Version: 1, WorkspaceID: ws, Name: "b", SHA256: "00", ContentType: "text/html", Size: 1, StorageKey: "k"}).Error)
	app := models.ConfiguredTool{ID: models.NewID(), WorkspaceID: ws, AgentID: agent, DisplayName: "Review", BaseTool: models.BaseAppTool, BundleID: &bundleID, BindingID: &b.ID}
	require.NoError(t, db.Create(&app).Error)
	task := models.Task{ID: models.NewID(), WorkspaceID: ws, AgentID: agent, Status: models.TaskRunning}
	require.NoError(t, db.Create(&task).Error)
	step := models.Step{ID: models.NewID(), TaskID: task.ID, Kind: models.StepAppTool, ConfiguredToolID: &app.ID, Status: models.StepCompleted}
	require.NoError(t, db.Create(&step).Error)
	rs.taskID, rs.stepID = task.ID, step.ID
	d := rs.must(t, 201, "POST", "/api/app-tools/sessions", rs.tenant.HostToken, map[string]any{"step_id": step.ID})
	rs.token = d["session_token"].(string)
	served := d["runtime"].(map[string]any)["tools"]
	require.ElementsMatch(t, []any{"double", "raise", "sleep", "dial", "vendor", "vendor_quiet", "invoice", "translate", "translate_quiet", "reparse"}, served,
		"the mint lists the tool ops this deployment runs, not the deleted tool's")
}

func (rs *runStack) run(t *testing.T, op string, payload any) reply {
	t.Helper()
	return rs.call(t, "POST", "/api/app-runtime/run", rs.token, map[string]any{"op": op, "payload": payload})
}

// counts are the run records of the stack's task.
type counts struct{ steps, cards, usage int64 }

func (rs *runStack) counts(t *testing.T) counts {
	t.Helper()
	var c counts
	db := rs.Store.DB
	require.NoError(t, db.Model(&models.Step{}).Where("task_id = ? AND parent_step_id IS NOT NULL", rs.taskID).Count(&c.steps).Error)
	require.NoError(t, db.Model(&models.FeedEvent{}).Where("task_id = ? AND type = ?", rs.taskID, "tool_run").Count(&c.cards).Error)
	require.NoError(t, db.Model(&models.UsageRecord{}).Where("task_id = ?", rs.taskID).Count(&c.usage).Error)
	return c
}

// TestRunEachExecutor runs every executor once through /run and checks
// what each records.
func TestRunEachExecutor(t *testing.T) {
	t.Parallel()
	rs := newRunStack(t)
	ctx := context.Background()

	r := rs.run(t, "double", map[string]any{"x": 21, "task_id": "someone else's"})
	require.Equal(t, 200, r.Status, string(r.Raw))
	require.Equal(t, map[string]any{"y": float64(42), "task": rs.taskID}, r.Body["output"], "the session's ids win: %s", r.Raw)
	require.Equal(t, counts{1, 1, 0}, rs.counts(t), "a python run is one app_tool_run step and one card")
	var step models.Step
	require.NoError(t, rs.Store.DB.Where("task_id = ? AND kind = ?", rs.taskID, models.StepAppToolRun).Take(&step).Error)
	require.Equal(t, rs.stepID, *step.ParentStepID)

	_, err := rs.P.Files.Upload(ctx, rs.taskID, "vendors.csv", "text/csv", strings.NewReader("id,vendor,country\n1,ACME,US\n2,Globex,DE\n"))
	require.NoError(t, err)
	r = rs.run(t, "vendor", map[string]any{"match_criteria": map[string]any{"vendor": "Globex"}, "return_columns": []string{"country"}, "file_name": "/etc/passwd"})
	require.Equal(t, 200, r.Status, string(r.Raw))
	require.Contains(t, string(r.Raw), `"DE"`)
	require.Equal(t, counts{2, 2, 0}, rs.counts(t), "a recorded lookup is a completed child step with a card")
	r = rs.run(t, "vendor_quiet", map[string]any{"match_criteria": map[string]any{"vendor": "ACME"}, "return_columns": []string{"country"}})
	require.Equal(t, 200, r.Status, string(r.Raw))
	require.Contains(t, string(r.Raw), `"US"`)
	require.Equal(t, counts{2, 2, 0}, rs.counts(t), "record:false on an unbilled lookup leaves no step and no card")

	r = rs.run(t, "invoice", map[string]any{"args": []any{2}})
	require.Equal(t, 200, r.Status, string(r.Raw))
	require.Contains(t, string(r.Raw), "Globex")
	require.Equal(t, counts{3, 3, 0}, rs.counts(t))

	r = rs.run(t, "translate", map[string]any{"texts": []string{"hello", "world"}, "target_language": "de"})
	require.Equal(t, 200, r.Status, string(r.Raw))
	require.Contains(t, string(r.Raw), `"translated_count":2`)
	require.Equal(t, counts{4, 4, 1}, rs.counts(t), "translate bills: its step carries a usage row")
	r = rs.run(t, "translate_quiet", map[string]any{"texts": []string{"a", "b", "c"}, "target_language": "de"})
	require.Equal(t, 200, r.Status, string(r.Raw))
	require.Equal(t, counts{5, 4, 2}, rs.counts(t), "record:false leaves no card, but a billed run keeps its step")
	var units float64
	require.NoError(t, rs.Store.DB.Model(&models.UsageRecord{}).Where("task_id = ? AND tool = ?", rs.taskID, models.BaseTranslateText).Select("sum(units)").Scan(&units).Error)
	require.Equal(t, float64(5), units, "one unit per string")

	file, err := rs.P.Files.Upload(ctx, rs.taskID, "invoice.pdf", "application/pdf", bytes.NewReader(documenttest.PDF("Total 12.50", "page two", "page three")))
	require.NoError(t, err)
	url, _ := rs.P.Files.URL(file)
	rs.model.answer(`{"total": 12.5}`)
	r = rs.run(t, "reparse", map[string]any{"file_url": url})
	require.Equal(t, 200, r.Status, string(r.Raw))
	require.Equal(t, map[string]any{"total": 12.5}, r.Body["output"].(map[string]any)["data"], string(r.Raw))
	require.NoError(t, rs.Store.DB.Model(&models.UsageRecord{}).Where("task_id = ? AND tool = ?", rs.taskID, models.BaseExtraction).Select("sum(units)").Scan(&units).Error)
	require.Equal(t, float64(3), units, "extraction bills the pages it read")

	r = rs.run(t, "reparse", map[string]any{"file_url": "http://example.com/invoice.pdf"})
	require.Equal(t, 403, r.Status, "a file_url that is not a managed URL of this task: %s", r.Raw)

	r = rs.run(t, "gone", nil)
	require.Equal(t, 501, r.Status, string(r.Raw))
}

// TestRunScriptFailures: a script that raises is a 200 with error and a
// failed step; one that dials out fails inside its sandbox.
func TestRunScriptFailures(t *testing.T) {
	t.Parallel()
	rs := newRunStack(t)
	r := rs.run(t, "raise", nil)
	require.Equal(t, 200, r.Status, string(r.Raw))
	require.Equal(t, "error", r.Body["status"])
	require.Contains(t, r.Body["error"], "ValueError: no such invoice")
	var step models.Step
	require.NoError(t, rs.Store.DB.Where("task_id = ? AND kind = ?", rs.taskID, models.StepAppToolRun).Take(&step).Error)
	require.Equal(t, models.StepFailed, step.Status)

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer ln.Close()
	var accepted atomic.Int32
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			accepted.Add(1)
			c.Close()
		}
	}()
	r = rs.run(t, "dial", map[string]any{"port": ln.Addr().(*net.TCPAddr).Port})
	require.Equal(t, 200, r.Status, string(r.Raw))
	require.Equal(t, "error", r.Body["status"], "the sandbox has no network: %s", r.Raw)
	require.Zero(t, accepted.Load(), "no connection reached the listener")
}

// TestRunPastItsDeadline is not parallel: it checks that no process the
// test binary started outlives the run, which parallel tests would blur.
func TestRunPastItsDeadline(t *testing.T) {
	rs := newRunStack(t)
	before := rs.counts(t)
	sawScript := make(chan bool, 1)
	go func() {
		for range 60 {
			if len(descendants(os.Getpid())) > 0 {
				sawScript <- true
				return
			}
			time.Sleep(50 * time.Millisecond)
		}
		sawScript <- false
	}()
	start := time.Now()
	r := rs.run(t, "sleep", nil)
	require.Equal(t, 504, r.Status, string(r.Raw))
	require.Less(t, time.Since(start), 6*time.Second, "answered at the deadline")
	require.True(t, <-sawScript, "the script's processes were seen running")
	require.Eventually(t, func() bool { return len(descendants(os.Getpid())) == 0 }, 3*time.Second, 20*time.Millisecond,
		"the script's whole process group is gone")
	time.Sleep(300 * time.Millisecond)
	require.Equal(t, before, rs.counts(t), "a run that timed out records nothing")
}

// descendants lists the processes below pid.
func descendants(pid int) []int {
	parents := map[int]int{}
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		p, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		stat, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue
		}
		// pid (comm) state ppid …; comm may hold spaces.
		fields := strings.Fields(string(stat[bytes.LastIndexByte(stat, ')')+1:]))
		if len(fields) > 2 {
			if state := fields[0]; state == "Z" {
				continue
			}
			pp, _ := strconv.Atoi(fields[1])
			parents[p] = pp
		}
	}
	var out []int
	for p := range parents {
		for q := parents[p]; q > 1; q = parents[q] {
			if q == pid {
				out = append(out, p)
				break
			}
		}
	}
	return out
}

// TestRunExtractionSlots: three concurrent extractions on one surface, two
// admitted, the third 429 with Retry-After.
func TestRunExtractionSlots(t *testing.T) {
	t.Parallel()
	rs := newRunStack(t)
	url := rs.invoiceURL(t)
	release := rs.model.hold()
	var wg sync.WaitGroup
	statuses := make(chan int, 2)
	for range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r, err := rs.send("POST", "/api/app-runtime/run", rs.token, map[string]any{"op": "reparse", "payload": map[string]any{"file_url": url}})
			if err == nil {
				statuses <- r.Status
			}
		}()
	}
	require.Eventually(t, func() bool { return rs.model.waiting() == 2 }, 10*time.Second, 10*time.Millisecond, "two extractions reach the model")
	r := rs.run(t, "reparse", map[string]any{"file_url": url})
	require.Equal(t, 429, r.Status, string(r.Raw))
	require.NotEmpty(t, r.Header.Get("Retry-After"))
	release()
	wg.Wait()
	close(statuses)
	for s := range statuses {
		require.Equal(t, 200, s)
	}
	r = rs.run(t, "reparse", map[string]any{"file_url": url})
	require.Equal(t, 200, r.Status, "a slot frees when its run ends: %s", r.Raw)
}

// invoiceURL uploads a one-page invoice PDF to the stack's task and returns
// its managed URL, the input of a reparse run.
func (rs *runStack) invoiceURL(t *testing.T) string {
	t.Helper()
	file, err := rs.P.Files.Upload(context.Background(), rs.taskID, "invoice.pdf", "application/pdf", bytes.NewReader(documenttest.PDF("Total 1")))
	require.NoError(t, err)
	url, _ := rs.P.Files.URL(file)
	return url
}

// TestRunBulkheadFullAnswers503: with RUN_CONCURRENCY=1, a run waiting on
// the worker fleet (an extraction the model holds) takes the process's one
// run slot; another /run, of another tool, waits RUN_WAIT and answers 503
// with Retry-After: 1 in the error envelope, having enqueued nothing; the
// slot frees when the held run ends. Lookups have a bulkhead of their own.
func TestRunBulkheadFullAnswers503(t *testing.T) {
	t.Parallel()
	const wait = 100 * time.Millisecond
	rs := newRunStack(t, func(c *config.Config) { c.RunConcurrency, c.RunWait = 1, wait })
	url := rs.invoiceURL(t)
	release := rs.model.hold()
	defer release()
	held := make(chan int, 1)
	go func() {
		r, err := rs.send("POST", "/api/app-runtime/run", rs.token, map[string]any{"op": "reparse", "payload": map[string]any{"file_url": url}})
		if err != nil {
			r.Status = -1
		}
		held <- r.Status
	}()
	require.Eventually(t, func() bool { return rs.model.waiting() == 1 }, 10*time.Second, 10*time.Millisecond, "the held run reaches the model")
	require.Equal(t, 1, rs.P.RunBulkhead.InUse())
	require.Zero(t, rs.P.Bulkhead.InUse(), "a run takes no lookup slot")

	before := rs.counts(t)
	start := time.Now()
	r := rs.run(t, "double", map[string]any{"x": 2})
	require.Equal(t, 503, r.Status, string(r.Raw))
	require.GreaterOrEqual(t, time.Since(start), wait, "a full bulkhead waits RUN_WAIT before refusing")
	require.Equal(t, "1", r.Header.Get("Retry-After"))
	require.Equal(t, "too many runs in progress; retry", r.Body["error"])
	require.Equal(t, before, rs.counts(t), "a refused run records nothing")

	release()
	require.Equal(t, 200, <-held)
	require.Zero(t, rs.P.RunBulkhead.InUse(), "the held run's slot is free once it ends")
	r = rs.run(t, "double", map[string]any{"x": 2})
	require.Equal(t, 200, r.Status, string(r.Raw))
	require.EqualValues(t, 4, r.Body["output"].(map[string]any)["y"])
}

// TestRunRedisUnreachable: a queue that cannot be reached at enqueue is 502.
func TestRunRedisUnreachable(t *testing.T) {
	t.Parallel()
	rs := newRunStack(t)
	rs.P.Runtime.Jobs = rs.unreachableWaiter(t, nil)
	r := rs.run(t, "double", map[string]any{"x": 1})
	require.Equal(t, 502, r.Status, string(r.Raw))
	require.Equal(t, counts{}, rs.counts(t))
}

// TestRunExtractionOfADocumentBomb: the attack's XLSX (four 58 MB
// inlineStr cells in a 1.3 MB file, which an upload accepts: it counts
// sheets) through /run's extraction is a final 422 over_budget naming the
// limit, found by streaming the sheet on the worker; the model is not
// called, nothing is billed or recorded, and asynq neither retries nor
// archives the job. Before, excelize read the whole sheet (~1.4 GiB
// allocated, 35 s) and the run answered 400.
func TestRunExtractionOfADocumentBomb(t *testing.T) {
	t.Parallel()
	rs := newRunStack(t)
	file, err := rs.P.Files.Upload(context.Background(), rs.taskID, "bomb.xlsx", "", bytes.NewReader(documenttest.XLSXBomb(58<<20, 4)))
	require.NoError(t, err)
	url, _ := rs.P.Files.URL(file)
	r := rs.run(t, "reparse", map[string]any{"file_url": url})
	require.Equal(t, 422, r.Status, string(r.Raw))
	// The text limit ends it; on a machine loaded enough (seen under -race
	// beside the api package's tests), the wall-time budget can come first:
	// either is the final over_budget naming its limit.
	require.Regexp(t, `more than 2 MiB of text|took more than 10s, the most one document operation may take`, string(r.Raw))
	require.Zero(t, rs.model.calls.Load(), "the model is not sent the sheet")
	require.Equal(t, counts{}, rs.counts(t), "nothing billed or recorded")
	info, err := asynq.NewInspectorFromRedisClient(rs.Redis.Client).GetQueueInfo(rs.Redis.Queues.Extract)
	require.NoError(t, err)
	require.Equal(t, 1, info.Processed, "the job ran once")
	require.Zero(t, info.Failed+info.Retry+info.Archived, "a final outcome: not failed, retried or archived")
}

// standInModel speaks the chat-completions protocol; hold makes it wait
// for release before answering.
type standInModel struct {
	URL     string
	mu      sync.Mutex
	answers []string
	gate    chan struct{}
	inside  atomic.Int32
	calls   atomic.Int32 // requests received
}

func newStandInModel(t *testing.T) *standInModel {
	m := &standInModel{}
	srv := httptest.NewServer(m)
	t.Cleanup(srv.Close)
	m.URL = srv.URL
	return m
}

func (m *standInModel) answer(content string) {
	m.mu.Lock()
	m.answers = append(m.answers, content)
	m.mu.Unlock()
}

func (m *standInModel) hold() (release func()) {
	m.mu.Lock()
	m.gate = make(chan struct{})
	gate := m.gate
	m.mu.Unlock()
	var once sync.Once
	return func() { once.Do(func() { close(gate) }) }
}

func (m *standInModel) waiting() int { return int(m.inside.Load()) }

func (m *standInModel) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	m.calls.Add(1)
	var req map[string]any
	_ = json.NewDecoder(r.Body).Decode(&req)
	m.mu.Lock()
	gate := m.gate
	answer := `{"total": 1}`
	if len(m.answers) > 0 {
		answer, m.answers = m.answers[0], m.answers[1:]
	}
	m.mu.Unlock()
	if gate != nil {
		m.inside.Add(1)
		<-gate
		m.inside.Add(-1)
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(map[string]any{
		"id": "chatcmpl-1", "object": "chat.completion", "model": req["model"],
		"choices": []any{map[string]any{"index": 0, "finish_reason": "stop", "message": map[string]any{"role": "assistant", "content": answer}}},
	})
}

// standInEngine speaks LibreTranslate's /translate.
type standInEngine struct{ URL string }

func newStandInEngine(t *testing.T) *standInEngine {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var req struct {
			Q      []string `json:"q"`
			Target string   `json:"target"`
		}
		if r.URL.Path != "/translate" || json.NewDecoder(r.Body).Decode(&req) != nil {
			http.Error(w, `{"error":"bad request"}`, 400)
			return
		}
		out := make([]string, len(req.Q))
		for i, q := range req.Q {
			out[i] = fmt.Sprintf("[%s] %s", req.Target, q)
		}
		_ = json.NewEncoder(w).Encode(map[string]any{"translatedText": out})
	}))
	t.Cleanup(srv.Close)
	return &standInEngine{URL: srv.URL}
}

// TestRunOnAWorkerOfSomeQueues: a worker serving only lookup answers
// lookups while a script waits for a script worker (here: until its
// deadline), so slow work is placed on machines of its own.
func TestRunOnAWorkerOfSomeQueues(t *testing.T) {
	t.Parallel()
	rs := newRunStack(t, func(c *config.Config) { c.WorkerQueues = []string{"lookup"} })
	r := rs.run(t, "invoice", map[string]any{"args": []any{1}})
	require.Equal(t, 200, r.Status, string(r.Raw))
	require.Contains(t, string(r.Raw), "ACME")
	r = rs.run(t, "double", map[string]any{"x": 1})
	require.Equal(t, 504, r.Status, "no worker serves the script queue: %s", r.Raw)
}
