package console_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/hibiken/asynq"
	"github.com/stretchr/testify/require"

	"github.com/appruntime/appruntime/internal/artifact"
	"github.com/appruntime/appruntime/internal/bindingspec"
	"github.com/appruntime/appruntime/internal/demo"
	"github.com/appruntime/appruntime/internal/queue"
	"github.com/appruntime/appruntime/internal/task"
	"github.com/appruntime/appruntime/internal/testkit/browser"
	"github.com/appruntime/appruntime/internal/toolconfig"
	"github.com/appruntime/appruntime/models"
	"github.com/appruntime/appruntime/worker"
)

// startWorker runs the worker fleet (its asynq servers and the outbox relay)
// on the stack's platform until the test ends.
func startWorker(t *testing.T, s *stack) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- worker.New(s.P.WorkerServices()).Run(ctx) }()
	t.Cleanup(func() { cancel(); require.NoError(t, <-done) })
}

// waitForTask reloads the queue's listing of state until a task of kind
// shows up in it.
func waitForTask(t *testing.T, ctx context.Context, s *stack, q, state, kind string) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		require.NoError(t, chromedp.Do(ctx,
			chromedp.Navigate(s.URL+"/queues?queue="+q+"&state="+state),
			chromedp.WaitVisible(chromedp.CSS(`#queues`)),
		))
		found, err := chromedp.Run(ctx, chromedp.Evaluate[bool](
			`[...document.querySelectorAll("#tasks td.kind")].some((td) => td.textContent === "`+kind+`")`))
		require.NoError(t, err)
		if found {
			return
		}
		require.True(t, time.Now().Before(deadline), "no %s %s task in queue %s", state, kind, q)
		time.Sleep(200 * time.Millisecond)
	}
}

func (s *stack) taskStatus(t *testing.T, id string) string {
	t.Helper()
	var task models.Task
	require.NoError(t, s.Store.DB.Where("id = ?", id).Take(&task).Error)
	return task.Status
}

// TestPausedQueueKeepsAJobPendingUntilResumed pauses the events queue on the
// Queues page, releases a parked task (its resume event goes to that queue),
// sees the job wait as pending and the task stay parked, resumes the queue
// and sees the job run and the task resume; both actions are audited.
func TestPausedQueueKeepsAJobPendingUntilResumed(t *testing.T) {
	t.Parallel()
	ctx := browser.New(t)
	s := newStack(t)
	f := seedDemo(t, s.P, s.Tenant)
	startWorker(t, s)
	events := s.P.Queues.Events
	row := `#queues tr[data-queue="` + events + `"]`

	signInAt(t, ctx, s, "/queues", "#queues")
	require.Eventually(t, func() bool {
		servers, err := s.P.JobQueues.Servers(context.Background())
		return err == nil && len(servers) > 0
	}, 10*time.Second, 100*time.Millisecond, "the worker's servers register")
	require.NoError(t, chromedp.Do(ctx,
		chromedp.Navigate(s.URL+"/queues"),
		chromedp.WaitVisible(chromedp.CSS(`#servers`)),
		chromedp.Click(chromedp.CSS(row+` button.pause`)),
		chromedp.WaitVisible(chromedp.CSS(row+` button.resume`)),
	))
	badge, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS(row+` .paused`)))
	require.NoError(t, err)
	require.Equal(t, "paused", badge)
	require.EqualValues(t, 1, auditCount(t, s.Store, s.Tenant.Workspace.ID, queue.ActionPause, events))

	// Release the parked task from its page: the resume event is queued on
	// the paused queue and waits there.
	require.NoError(t, chromedp.Do(ctx,
		chromedp.Navigate(s.URL+"/tasks/"+f.TaskID),
		chromedp.SendKeys(chromedp.CSS(`form[action$="/release"] input[name="note"]`), "released from the test"),
		chromedp.Click(chromedp.CSS(`form[action$="/release"] button`)),
		chromedp.WaitVisible(chromedp.CSS(`.await-resolved`)),
	))
	waitForTask(t, ctx, s, events, queue.StatePending, "resume_event")
	time.Sleep(time.Second)
	require.Equal(t, models.TaskWaitingForInput, s.taskStatus(t, f.TaskID), "nothing ran the resume event")
	waitForTask(t, ctx, s, events, queue.StatePending, "resume_event")

	// Resume the queue: the job runs and the task runs again.
	require.NoError(t, chromedp.Do(ctx,
		chromedp.Navigate(s.URL+"/queues"),
		chromedp.Click(chromedp.CSS(row+` button.resume`)),
		chromedp.WaitVisible(chromedp.CSS(row+` button.pause`)),
	))
	require.EqualValues(t, 1, auditCount(t, s.Store, s.Tenant.Workspace.ID, queue.ActionResume, events))
	require.Eventually(t, func() bool { return s.taskStatus(t, f.TaskID) == models.TaskRunning }, 30*time.Second, 100*time.Millisecond)
	waitForTask(t, ctx, s, events, queue.StateCompleted, "resume_event")
}

// sleeperRun is a /run of a python tool that sleeps two minutes, sent by a
// bundle's session on an app-tool step of its own, and what it answered.
type sleeperRun struct {
	Status  int
	Body    string
	Elapsed time.Duration
}

// startSleeperRun gives the tenant a python tool that sleeps, a binding that
// lets a bundle /run it, and an app-tool step on that binding; it sends the
// /run through the API with the step's session and reports the reply on the
// channel.
func startSleeperRun(t *testing.T, s *stack, f fixture) <-chan sleeperRun {
	t.Helper()
	ctx := context.Background()
	ws, actor := s.Tenant.Workspace.ID, "user:"+s.Tenant.Admin.ID
	_, err := s.P.Tools.Create(ctx, ws, actor, toolconfig.Input{
		AgentID: s.Tenant.Agent.ID, DisplayName: "Sleeper", BaseTool: models.BasePythonCode,
		Config: json.RawMessage(`{"code":"import time\ndef main(input):\n    time.sleep(120)\n    return {}\n"}`),
	})
	require.NoError(t, err)
	spec := demo.Spec()
	spec.Tools = []bindingspec.Tool{{Op: "sleep", Tool: "Sleeper"}}
	raw, err := json.Marshal(spec)
	require.NoError(t, err)
	b, err := s.P.Bindings.Create(ctx, ws, actor, bindingspec.Input{
		Name: "Sleeper binding", BindingKind: bindingspec.KindPostgres, IntegrationID: f.IntegrationID, AllowedOperations: raw,
	})
	require.NoError(t, err)
	app, err := s.P.Tools.Create(ctx, ws, actor, toolconfig.Input{
		AgentID: s.Tenant.Agent.ID, DisplayName: "Sleeper app", BaseTool: models.BaseAppTool, BundleID: &f.BundleID, BindingID: &b.ID,
	})
	require.NoError(t, err)
	caller := task.Caller{WorkspaceID: ws, AgentID: s.Tenant.Agent.ID, Actor: "agent:" + s.Tenant.Agent.ID}
	tk, err := s.P.Tasks.Create(ctx, caller, task.TaskInput{Title: "Sleep"})
	require.NoError(t, err)
	step, err := s.P.Tasks.AddAppToolStep(ctx, caller, tk.ID, task.StepInput{ConfiguredToolID: app.ID})
	require.NoError(t, err)
	desc, err := s.P.Artifacts.Mint(ctx, artifact.MintRequest{WorkspaceID: ws, UserID: s.Tenant.Admin.ID, StepID: step.ID})
	require.NoError(t, err)

	out := make(chan sleeperRun, 1)
	go func() {
		start := time.Now()
		req, err := http.NewRequest(http.MethodPost, s.APIURL+"/api/app-runtime/run", strings.NewReader(`{"op":"sleep","payload":{}}`))
		if err != nil {
			out <- sleeperRun{Body: err.Error()}
			return
		}
		req.Header.Set("Authorization", "Bearer "+desc.SessionToken)
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("X-Nanonets-App-Runtime", "v2")
		res, err := (&http.Client{Timeout: 3 * time.Minute}).Do(req)
		if err != nil {
			out <- sleeperRun{Body: err.Error(), Elapsed: time.Since(start)}
			return
		}
		defer res.Body.Close()
		body, _ := io.ReadAll(res.Body)
		out <- sleeperRun{Status: res.StatusCode, Body: string(body), Elapsed: time.Since(start)}
	}()
	return out
}

// TestCancelAnActiveJob starts a /run of a python script that sleeps two
// minutes, finds its job active on the Queues page, clicks Cancel, and sees
// the job leave the active list for the archived one with its error, the
// /run answer at once that the job was cancelled (not wait out its 900 s
// deadline, nor call it a timeout), and the cancel audited.
func TestCancelAnActiveJob(t *testing.T) {
	t.Parallel()
	ctx := browser.New(t)
	s := newStack(t)
	f := seedDemo(t, s.P, s.Tenant)
	startWorker(t, s)
	script := s.P.Queues.Script

	signInAt(t, ctx, s, "/queues", "#queues")
	run := startSleeperRun(t, s, f)
	waitForTask(t, ctx, s, script, queue.StateActive, "run_tool")
	attr, err := chromedp.Run(ctx, chromedp.AttributeValue(chromedp.CSS(`#tasks tr[data-task]`), "data-task"))
	require.NoError(t, err)
	id := attr.Value
	time.Sleep(500 * time.Millisecond) // the script is running, not starting
	select {
	case r := <-run:
		t.Fatalf("the /run answered before the cancel: %d %s", r.Status, r.Body)
	default:
	}

	clicked := time.Now()
	require.NoError(t, chromedp.Do(ctx,
		chromedp.Click(chromedp.CSS(`#tasks tr[data-task="`+id+`"] form[action$="/cancel"] button`)),
		chromedp.WaitVisible(chromedp.CSS(`.notice`)),
	))
	notice, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS(`.notice`)))
	require.NoError(t, err)
	require.Contains(t, strings.ToLower(notice), "cancel")
	require.EqualValues(t, 1, auditCount(t, s.Store, s.Tenant.Workspace.ID, queue.ActionCancel, id))

	select {
	case r := <-run:
		require.Equal(t, http.StatusConflict, r.Status, r.Body)
		require.Contains(t, r.Body, "cancelled")
		require.Less(t, time.Since(clicked), 15*time.Second, "the /run answered %s after the cancel", time.Since(clicked))
	case <-time.After(30 * time.Second):
		t.Fatal("the /run did not answer within 30 s of the cancel")
	}

	// The job left the active list: it is archived (a /run is never
	// retried), with the cancel as its last error.
	waitForTask(t, ctx, s, script, queue.StateArchived, "run_tool")
	lastError, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS(`#tasks tr[data-task="`+id+`"] td.last-error`)))
	require.NoError(t, err)
	require.Contains(t, lastError, "cancel")
	require.NoError(t, chromedp.Do(ctx, chromedp.Navigate(s.URL+"/queues?queue="+script+"&state=active"), chromedp.WaitVisible(chromedp.CSS(`#queues`))))
	rows, err := chromedp.Run(ctx, chromedp.Evaluate[int](`document.querySelectorAll("#tasks tr[data-task]").length`))
	require.NoError(t, err)
	require.Zero(t, rows, "nothing is active any more")

	// Cancelling a job that is no longer active is refused, not audited.
	cl := s.signedIn(t)
	cl.get("/queues?queue=" + script + "&state=archived")
	p := cl.post("/queues/"+script+"/tasks/"+id+"/cancel", url.Values{"state": {"archived"}})
	require.Equal(t, http.StatusConflict, p.Status, p.Body)
	require.EqualValues(t, 1, auditCount(t, s.Store, s.Tenant.Workspace.ID, queue.ActionCancel, id))
}

// TestQueuesPageInTheBrowser: a queue's view charts its daily counts from
// real asynq runs (today's bar at 4 processed, 1 failed, drawn); a task's
// link opens its page with the payload; the auto-refresh reloads the page
// until paused, stays paused across a reload (localStorage), and reloads
// again once resumed; two tasks selected and archived in bulk are archived
// and audited, the third is left pending.
func TestQueuesPageInTheBrowser(t *testing.T) {
	t.Parallel()
	ctx := browser.New(t)
	s := newStack(t)
	q := s.P.Queues.Lookup
	processQueue(t, s.P.Redis, q, 3, 1)
	one := enqueue(t, s.P.Redis, q, kindOK, `{"n":1}`)
	two := enqueue(t, s.P.Redis, q, kindOK, `{"n":2}`)
	kept := enqueue(t, s.P.Redis, q, kindOK, `{"n":3,"note":"<b>kept</b>"}`)
	listing := "/queues?queue=" + q + "&state=pending"

	// The chart.
	signInAt(t, ctx, s, listing, "#history svg")
	today := time.Now().UTC().Format("2006-01-02")
	bar := `#history g.day[data-day="` + today + `"]`
	counts, err := chromedp.Run(ctx, chromedp.Evaluate[[]string](`(() => { const g = document.querySelector('`+bar+`');
		return [g.dataset.processed, g.dataset.failed, String(g.querySelector("rect.ok").getBBox().height > 0), String(g.querySelector("rect.failed").getBBox().height > 0)]; })()`))
	require.NoError(t, err)
	require.Equal(t, []string{"4", "1", "true", "true"}, counts)
	days, err := chromedp.Run(ctx, chromedp.Evaluate[int](`document.querySelectorAll("#history g.day").length`))
	require.NoError(t, err)
	require.Equal(t, queue.HistoryDays, days)

	// A task's page, from its link.
	require.NoError(t, chromedp.Do(ctx,
		chromedp.Click(chromedp.CSS(`#tasks tr[data-task="`+kept+`"] a`)),
		chromedp.WaitVisible(chromedp.CSS(`#payload`)),
	))
	payload, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS(`#payload`)))
	require.NoError(t, err)
	require.Equal(t, "{\n  \"n\": 3,\n  \"note\": \"<b>kept</b>\"\n}", payload)
	bold, err := chromedp.Run(ctx, chromedp.Evaluate[int](`document.querySelectorAll("#payload b").length`))
	require.NoError(t, err)
	require.Zero(t, bold, "the payload is text, not markup")

	// The auto-refresh reloads the listing (a marker left in the page is
	// gone) until paused.
	marked := func() bool {
		// An error is a page being replaced by the reload: no marker.
		v, err := chromedp.Run(ctx, chromedp.Evaluate[bool](`window.testMarker === true`))
		return err == nil && v
	}
	mark := func() {
		_, err := chromedp.Run(ctx, chromedp.Evaluate[bool](`window.testMarker = true`))
		require.NoError(t, err)
	}
	require.NoError(t, chromedp.Do(ctx, chromedp.Navigate(s.URL+listing), chromedp.WaitVisible(chromedp.CSS(`#autorefresh[data-state="on"]`))))
	mark()
	require.Eventually(t, func() bool { return !marked() }, 20*time.Second, 250*time.Millisecond, "the page reloads itself")
	require.NoError(t, chromedp.Do(ctx,
		chromedp.WaitVisible(chromedp.CSS(`#autorefresh[data-state="on"]`)),
		chromedp.Click(chromedp.CSS(`#autorefresh-toggle`)),
		chromedp.WaitVisible(chromedp.CSS(`#autorefresh[data-state="paused"]`)),
	))
	mark()
	time.Sleep(12 * time.Second) // longer than the 10 s period
	require.True(t, marked(), "a paused page does not reload")
	require.NoError(t, chromedp.Do(ctx, chromedp.Navigate(s.URL+listing), chromedp.WaitVisible(chromedp.CSS(`#autorefresh[data-state="paused"]`))))
	label, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS(`#autorefresh`)))
	require.NoError(t, err)
	require.Contains(t, label, "Auto-refresh paused.")

	// Bulk archive of two tasks.
	require.NoError(t, chromedp.Do(ctx,
		chromedp.Click(chromedp.CSS(`#tasks tr[data-task="`+one+`"] input[type="checkbox"]`)),
		chromedp.Click(chromedp.CSS(`#tasks tr[data-task="`+two+`"] input[type="checkbox"]`)),
		chromedp.Click(chromedp.CSS(`#bulk button[value="archive"]`)),
		chromedp.WaitVisible(chromedp.CSS(`#bulk-summary`)),
	))
	done, err := chromedp.Run(ctx, chromedp.AttributeValue(chromedp.CSS(`#bulk-summary`), "data-done"))
	require.NoError(t, err)
	require.Equal(t, "2", done.Value)
	insp := asynq.NewInspectorFromRedisClient(s.P.Redis)
	for id, want := range map[string]asynq.TaskState{one: asynq.TaskStateArchived, two: asynq.TaskStateArchived, kept: asynq.TaskStatePending} {
		ti, err := insp.GetTaskInfo(q, id)
		require.NoError(t, err)
		require.Equal(t, want, ti.State, id)
	}
	require.EqualValues(t, 1, auditCount(t, s.Store, s.Tenant.Workspace.ID, queue.ActionArchive, one))
	require.EqualValues(t, 1, auditCount(t, s.Store, s.Tenant.Workspace.ID, queue.ActionArchive, two))

	// Resumed, the listing reloads itself again.
	require.NoError(t, chromedp.Do(ctx,
		chromedp.Navigate(s.URL+listing),
		chromedp.Click(chromedp.CSS(`#autorefresh-toggle`)),
		chromedp.WaitVisible(chromedp.CSS(`#autorefresh[data-state="on"]`)),
	))
	mark()
	require.Eventually(t, func() bool { return !marked() }, 20*time.Second, 250*time.Millisecond, "the resumed page reloads itself")
}
