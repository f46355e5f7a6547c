package console_test

import (
	"context"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"

	"github.com/appruntime/appruntime/internal/queue"
	"github.com/appruntime/appruntime/internal/testkit/browser"
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
