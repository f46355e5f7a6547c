package agentcall_test

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/hibiken/asynq"
	"github.com/stretchr/testify/require"

	"github.com/appruntime/appruntime/internal/agentcall"
	"github.com/appruntime/appruntime/internal/agenttool"
	"github.com/appruntime/appruntime/internal/apperr"
	"github.com/appruntime/appruntime/internal/jobwait"
	"github.com/appruntime/appruntime/internal/logging"
	"github.com/appruntime/appruntime/internal/store"
	"github.com/appruntime/appruntime/internal/task"
	"github.com/appruntime/appruntime/internal/testkit"
	"github.com/appruntime/appruntime/jobs"
	"github.com/appruntime/appruntime/models"
)

var quiet = logging.New(io.Discard, slog.LevelError)

// fixture is a service whose tool calls go through the lookup queue of
// rd, a url tool pointing at a loopback endpoint, and a running task.
type fixture struct {
	svc    *agentcall.Service
	st     *store.Store
	url    string // the endpoint's
	rd     testkit.RedisEnv
	caller task.Caller
	taskID string
}

func newFixture(t *testing.T, deadline time.Duration, endpoint http.HandlerFunc) fixture {
	t.Helper()
	return newFixtureTB(t, deadline, endpoint, true)
}

// newFixtureTB is newFixture for tests and benchmarks; queued false runs
// targets in this process (no waiter).
func newFixtureTB(t testing.TB, deadline time.Duration, endpoint http.HandlerFunc, queued bool) fixture {
	t.Helper()
	st := testkit.Schema(t)
	rd := testkit.Redis(t)
	tn := testkit.NewTenant(t, st.DB)
	srv := httptest.NewServer(endpoint)
	t.Cleanup(srv.Close)
	var waiter *jobwait.Waiter
	if queued {
		waiter = jobwait.NewWaiter(rd.Client, rd.Prefix, quiet)
		t.Cleanup(waiter.Close)
	}
	svc := agentcall.NewService(agentcall.Options{
		Store: st, Log: quiet, Deadline: deadline, Jobs: waiter, Queue: rd.Queues.Lookup,
		Dispatcher: agenttool.NewDispatcher(agenttool.DispatcherOptions{Allow: testkit.Loopback, Log: quiet}),
	})
	ctx := context.Background()
	_, err := svc.CreateDeclaration(ctx, tn.Workspace.ID, tn.Agent.ID, "test", []byte(`{"name": "echo", "displayName": "Echo",
		"description": "Echoes.", "input": {"type": "object"},
		"target": {"type": "url", "url": "`+srv.URL+`/echo", "method": "POST", "body": "${input}"}}`))
	require.NoError(t, err)
	caller := task.Caller{WorkspaceID: tn.Workspace.ID, AgentID: tn.Agent.ID, Actor: "agent:" + tn.Agent.ID}
	tk, err := task.NewService(task.Options{Store: st, Log: quiet}).Create(ctx, caller, task.TaskInput{Title: "t"})
	require.NoError(t, err)
	return fixture{svc: svc, st: st, url: srv.URL, rd: rd, caller: caller, taskID: tk.ID}
}

// startLookupWorker serves the lookup queue with the service's handler,
// as the worker does.
func (f fixture) startLookupWorker(t testing.TB) {
	t.Helper()
	srv := asynq.NewServerFromRedisClient(f.rd.Client, asynq.Config{Queues: map[string]int{f.rd.Queues.Lookup: 1},
		Concurrency: 2, TaskCheckInterval: 50 * time.Millisecond, LogLevel: asynq.FatalLevel})
	mux := asynq.NewServeMux()
	mux.Handle(jobs.AgentToolCall{}.Kind(), jobwait.Handler(f.rd.Client, f.rd.Prefix, func(ctx context.Context, task *asynq.Task) (json.RawMessage, error) {
		args, err := jobs.Decode[jobs.AgentToolCall](task)
		if err != nil {
			return nil, err
		}
		out, err := f.svc.Execute(ctx, args)
		if err != nil {
			return nil, err
		}
		return json.Marshal(out)
	}))
	require.NoError(t, srv.Start(mux))
	t.Cleanup(srv.Shutdown)
}

// TestToolCallRunsOnTheLookupQueue: the call's target runs in the worker's
// handler and the API records its reply.
func TestToolCallRunsOnTheLookupQueue(t *testing.T) {
	t.Parallel()
	f := newFixture(t, 20*time.Second, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain")
		_, _ = io.Copy(w, r.Body)
	})
	f.startLookupWorker(t)
	v, err := f.svc.Call(context.Background(), f.caller, f.taskID, agentcall.CallInput{Name: "echo", Input: json.RawMessage(`{"a": 1}`)})
	require.NoError(t, err)
	require.Equal(t, models.ToolCallCompleted, v.Status)
	require.Equal(t, `{"a":1}`, v.Result.Content)
	require.Equal(t, "text", v.Result.Display)
}

// TestToolCallPastItsDeadlineIs504: with nobody serving the queue, the
// call ends at its deadline with a 504 and is recorded as failed.
func TestToolCallPastItsDeadlineIs504(t *testing.T) {
	t.Parallel()
	f := newFixture(t, time.Second, func(w http.ResponseWriter, r *http.Request) {})
	start := time.Now()
	_, err := f.svc.Call(context.Background(), f.caller, f.taskID, agentcall.CallInput{Name: "echo"})
	require.Equal(t, apperr.Timeout, apperr.CodeOf(err), "error: %v", err)
	require.Less(t, time.Since(start), 5*time.Second)
	calls, err := f.svc.ListCalls(context.Background(), f.taskID)
	require.NoError(t, err)
	require.Len(t, calls, 1)
	require.Equal(t, models.ToolCallFailed, calls[0].Status)
	require.Contains(t, calls[0].Error, "deadline")
}

// TestToolCallRefusals: an input that breaks the schema, an unknown tool
// and a task that is not running call nothing.
func TestToolCallRefusals(t *testing.T) {
	t.Parallel()
	f := newFixture(t, time.Second, func(w http.ResponseWriter, r *http.Request) {})
	ctx := context.Background()
	_, err := f.svc.Call(ctx, f.caller, f.taskID, agentcall.CallInput{Name: "echo", Input: json.RawMessage(`[1]`)})
	require.Equal(t, apperr.Invalid, apperr.CodeOf(err), "error: %v", err)
	_, err = f.svc.Call(ctx, f.caller, f.taskID, agentcall.CallInput{Name: "nope"})
	require.Equal(t, apperr.NotFound, apperr.CodeOf(err), "error: %v", err)
	other := f.caller
	other.AgentID = models.NewID()
	_, err = f.svc.Call(ctx, other, f.taskID, agentcall.CallInput{Name: "echo"})
	require.Equal(t, apperr.NotFound, apperr.CodeOf(err), "another agent's task: %v", err)
	calls, err := f.svc.ListCalls(ctx, f.taskID)
	require.NoError(t, err)
	require.Empty(t, calls)
}

// TestToolCallResultWithNUL is issue 23's LOW: a tool answering text with a
// NUL byte answered 500 and left its call running (Postgres stores no
// U+0000). The call completes, each NUL stored as U+FFFD.
func TestToolCallResultWithNUL(t *testing.T) {
	t.Parallel()
	f := newFixture(t, 20*time.Second, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain")
		_, _ = w.Write([]byte("before\x00after\x00"))
	})
	f.startLookupWorker(t)
	v, err := f.svc.Call(context.Background(), f.caller, f.taskID, agentcall.CallInput{Name: "echo"})
	require.NoError(t, err)
	require.Equal(t, models.ToolCallCompleted, v.Status)
	require.Equal(t, "before\uFFFDafter\uFFFD", v.Result.Content)
	calls, err := f.svc.ListCalls(context.Background(), f.taskID)
	require.NoError(t, err)
	require.Len(t, calls, 1)
	require.Equal(t, models.ToolCallCompleted, calls[0].Status, "recorded, not left running")
	require.Equal(t, "before\uFFFDafter\uFFFD", calls[0].Result.Content)
}
