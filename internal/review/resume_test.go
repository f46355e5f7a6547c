package review_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"sync"
	"testing"
	"time"

	"github.com/hibiken/asynq"
	"github.com/stretchr/testify/require"
	"gorm.io/gorm"

	"github.com/appruntime/appruntime/internal/apperr"
	"github.com/appruntime/appruntime/internal/crypt"
	"github.com/appruntime/appruntime/internal/feed"
	"github.com/appruntime/appruntime/internal/gateway"
	"github.com/appruntime/appruntime/internal/logging"
	"github.com/appruntime/appruntime/internal/outbox"
	"github.com/appruntime/appruntime/internal/review"
	"github.com/appruntime/appruntime/internal/session"
	"github.com/appruntime/appruntime/internal/store"
	"github.com/appruntime/appruntime/internal/testkit"
	"github.com/appruntime/appruntime/internal/webhook"
	"github.com/appruntime/appruntime/jobs"
	"github.com/appruntime/appruntime/models"
)

var (
	quiet    = logging.New(io.Discard, slog.LevelError)
	loopback = []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}
)

const webhookSecret = "whsec_test_0123456789abcdef"

// parked is a task parked on one app-tool await, on a schema and Redis of
// the test's own.
type parked struct {
	st      *store.Store
	rd      testkit.RedisEnv
	tn      testkit.Tenant
	task    models.Task
	step    models.Step
	await   models.TaskAwait
	box     *crypt.Box
	resumer *review.Resumer
}

// newParked parks a task in the test's own transaction: for tests whose
// work runs on the test's goroutine.
func newParked(t *testing.T) *parked {
	t.Helper()
	return newParkedOn(t, testkit.Tx(t))
}

// newParkedCommitted parks a task on a schema of the test's own, for tests
// where other goroutines (racing approvals, an asynq server, a relay) must
// see each other's commits.
func newParkedCommitted(t *testing.T) *parked {
	t.Helper()
	return newParkedOn(t, testkit.Schema(t))
}

func newParkedOn(t *testing.T, st *store.Store) *parked {
	t.Helper()
	rd := testkit.Redis(t)
	tn := testkit.NewTenant(t, st.DB)
	p := &parked{st: st, rd: rd, tn: tn}
	p.task = models.Task{ID: models.NewID(), WorkspaceID: tn.Workspace.ID, AgentID: tn.Agent.ID, Status: models.TaskWaitingForInput}
	require.NoError(t, st.DB.Create(&p.task).Error)
	p.step, p.await = p.addAwait(t)
	box, err := crypt.New(testkit.TestKey)
	require.NoError(t, err)
	p.box = box
	p.resumer = p.newResumer(loopback)
	return p
}

// addAwait adds an app-tool step holding the task with a pending await.
func (p *parked) addAwait(t *testing.T) (models.Step, models.TaskAwait) {
	t.Helper()
	step := models.Step{ID: models.NewID(), TaskID: p.task.ID, Kind: models.StepAppTool, Status: models.StepCompleted}
	require.NoError(t, p.st.DB.Create(&step).Error)
	aw := models.TaskAwait{ID: models.NewID(), TaskID: p.task.ID, SourceType: models.AwaitSourceAppTool,
		CorrelationKey: step.ID, Status: models.AwaitPending}
	require.NoError(t, p.st.DB.Create(&aw).Error)
	return step, aw
}

func (p *parked) newResumer(allow []netip.Prefix) *review.Resumer {
	return review.NewResumer(review.ResumerOptions{
		Store: p.st, Redis: p.rd.Client, Queue: p.rd.Queues.Events, Secrets: p.box,
		HTTPClient: gateway.NewClient(allow, 0), Log: quiet,
	})
}

// setWebhook gives the agent a resume webhook and its sealed secret.
func (p *parked) setWebhook(t *testing.T, url string) {
	t.Helper()
	sealed, err := p.box.Seal([]byte(webhookSecret))
	require.NoError(t, err)
	require.NoError(t, p.st.DB.Model(&models.Agent{}).Where("id = ?", p.tn.Agent.ID).
		Updates(map[string]any{"resume_webhook_url": url, "webhook_secret_enc": sealed}).Error)
}

// release resolves the await of step as an action of a reviewer's session
// would, and returns the outbox id of its resume event.
func (p *parked) release(t *testing.T, step models.Step) string {
	t.Helper()
	claims := session.Claims{TaskID: p.task.ID, AgentID: p.tn.Agent.ID, WorkspaceID: p.tn.Workspace.ID, StepID: step.ID}
	require.NoError(t, p.st.Tx(context.Background(), func(tx *gorm.DB) error {
		_, ok, err := review.ResolveSessionAwait(context.Background(), tx, claims, "user:"+p.tn.Admin.ID, "approve_invoice")
		require.True(t, ok)
		return err
	}))
	var row models.Outbox
	require.NoError(t, p.st.DB.Where("kind = ? AND payload->>'step_id' = ?", outbox.KindResumeEvent, step.ID).Take(&row).Error)
	return row.ID
}

func (p *parked) taskStatus(t *testing.T) string {
	t.Helper()
	var task models.Task
	require.NoError(t, p.st.DB.Where("id = ?", p.task.ID).Take(&task).Error)
	return task.Status
}

func (p *parked) resumedRows(t *testing.T) []models.FeedEvent {
	t.Helper()
	var rows []models.FeedEvent
	require.NoError(t, p.st.DB.Where("task_id = ? AND type = ?", p.task.ID, models.FeedTaskResumed).Order("id").Find(&rows).Error)
	return rows
}

// deliveries returns the finished delivery attempts of eventID (an attempt
// is recorded before it is sent and finished once its outcome is known).
func (p *parked) deliveries(t *testing.T, eventID string) []models.WebhookDelivery {
	t.Helper()
	var rows []models.WebhookDelivery
	require.NoError(t, p.st.DB.Where("event_id = ? AND finished_at IS NOT NULL", eventID).Order("attempt").Find(&rows).Error)
	return rows
}

// startEvents runs a real asynq server on the test's events queue with the
// resume and webhook handlers, retrying webhooks after retryAfter.
func (p *parked) startEvents(t *testing.T, retryAfter time.Duration) {
	t.Helper()
	mux := asynq.NewServeMux()
	mux.HandleFunc(jobs.ResumeEvent{}.Kind(), func(ctx context.Context, task *asynq.Task) error {
		args, err := jobs.Decode[jobs.ResumeEvent](task)
		if err != nil {
			return err
		}
		return p.resumer.HandleResume(ctx, args.OutboxID)
	})
	mux.HandleFunc(jobs.WebhookDelivery{}.Kind(), func(ctx context.Context, task *asynq.Task) error {
		args, err := jobs.Decode[jobs.WebhookDelivery](task)
		if err != nil {
			return err
		}
		return p.resumer.HandleWebhook(ctx, args.EventID)
	})
	srv := asynq.NewServerFromRedisClient(p.rd.Client, asynq.Config{
		Concurrency: 4, Queues: map[string]int{p.rd.Queues.Events: 1}, LogLevel: asynq.FatalLevel,
		TaskCheckInterval: 50 * time.Millisecond, DelayedTaskCheckInterval: 100 * time.Millisecond,
		RetryDelayFunc: func(int, error, *asynq.Task) time.Duration { return retryAfter },
	})
	require.NoError(t, srv.Start(mux))
	t.Cleanup(srv.Shutdown)
}

// receiver is a webhook endpoint on loopback that answers with the next of
// its statuses (the last one repeats) and keeps what it received.
type receiver struct {
	*httptest.Server
	mu       sync.Mutex
	statuses []int
	got      []received
}

type received struct {
	header http.Header
	body   []byte
}

func newReceiver(t *testing.T, statuses ...int) *receiver {
	t.Helper()
	rc := &receiver{statuses: statuses}
	rc.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		rc.mu.Lock()
		status := rc.statuses[min(len(rc.got), len(rc.statuses)-1)]
		rc.got = append(rc.got, received{header: r.Header.Clone(), body: body})
		rc.mu.Unlock()
		w.WriteHeader(status)
	}))
	t.Cleanup(rc.Close)
	return rc
}

func (rc *receiver) requests() []received {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return append([]received(nil), rc.got...)
}

func TestResumeRunsTaskOnceEvenWhenRunTwice(t *testing.T) {
	t.Parallel()
	p := newParkedCommitted(t)
	id := p.release(t, p.step)
	ctx := context.Background()

	var wg sync.WaitGroup
	errs := make([]error, 3)
	for i := range errs {
		wg.Go(func() { errs[i] = p.resumer.HandleResume(ctx, id) })
	}
	wg.Wait()
	for _, err := range errs {
		require.NoError(t, err)
	}
	require.NoError(t, p.resumer.HandleResume(ctx, id))

	require.Equal(t, models.TaskRunning, p.taskStatus(t))
	rows := p.resumedRows(t)
	require.Len(t, rows, 1)
	require.Equal(t, id, *rows[0].DedupeKey)
	require.Equal(t, p.step.ID, *rows[0].StepID)
	require.Equal(t, "approve_invoice", rows[0].Name)
	var ev review.ResumeEvent
	require.NoError(t, rows[0].Payload.Decode(&ev))
	require.Equal(t, id, ev.ID)
	require.Equal(t, p.await.ID, ev.AwaitID)
	require.Equal(t, review.ResumeEventType, ev.Type)

	// No webhook URL: no delivery job; the event is read from the pull endpoint.
	_, err := asynq.NewInspectorFromRedisClient(p.rd.Client).GetTaskInfo(p.rd.Queues.Events, review.WebhookTaskID(id))
	require.True(t, errors.Is(err, asynq.ErrTaskNotFound) || errors.Is(err, asynq.ErrQueueNotFound), "want no job, got %v", err)
	page, err := feed.AgentTaskEvents(ctx, p.st.DB, p.tn.Workspace.ID, p.tn.Agent.ID, p.task.ID, 0)
	require.NoError(t, err)
	require.Len(t, page.Events, 1)
	require.Equal(t, models.FeedTaskResumed, page.Events[0].Type)
	require.Equal(t, rows[0].ID, page.NextAfter)
}

func TestResumeOnSQLite(t *testing.T) {
	t.Parallel()
	p := newParkedOn(t, testkit.SQLite(t))
	rc := newReceiver(t, http.StatusOK)
	p.setWebhook(t, rc.URL)
	id := p.release(t, p.step)
	for range 2 {
		require.NoError(t, p.resumer.HandleResume(context.Background(), id))
	}
	require.Equal(t, models.TaskRunning, p.taskStatus(t))
	require.Len(t, p.resumedRows(t), 1)
	require.NoError(t, p.resumer.HandleWebhook(context.Background(), id))
	require.Len(t, rc.requests(), 1)
	require.Equal(t, http.StatusOK, p.deliveries(t, id)[0].StatusCode)
}

func TestResumeWaitsForEveryAwait(t *testing.T) {
	t.Parallel()
	p := newParked(t)
	secondStep, _ := p.addAwait(t)
	ctx := context.Background()

	first := p.release(t, p.step)
	require.NoError(t, p.resumer.HandleResume(ctx, first))
	require.Equal(t, models.TaskWaitingForInput, p.taskStatus(t), "another await still holds the task")
	require.Len(t, p.resumedRows(t), 1)

	second := p.release(t, secondStep)
	require.NoError(t, p.resumer.HandleResume(ctx, second))
	require.Equal(t, models.TaskRunning, p.taskStatus(t))
	require.Len(t, p.resumedRows(t), 2)
}

func TestResumeRefusesWhatIsNotAResumeEvent(t *testing.T) {
	t.Parallel()
	p := newParked(t)
	var summaryID string
	require.NoError(t, p.st.Tx(context.Background(), func(tx *gorm.DB) error {
		var err error
		summaryID, err = outbox.Add(tx, outbox.KindSummary, map[string]string{"step_id": p.step.ID})
		return err
	}))
	for _, tc := range []struct {
		id   string
		code apperr.Code
	}{
		{"not-a-uuid", apperr.Invalid},
		{models.NewID(), apperr.NotFound},
		{summaryID, apperr.Invalid},
	} {
		err := p.resumer.HandleResume(context.Background(), tc.id)
		require.Equal(t, tc.code, apperr.CodeOf(err), "%s: %v", tc.id, err)
	}
	require.Equal(t, models.TaskWaitingForInput, p.taskStatus(t))
}

func TestResumeEnqueuesOneWebhookJob(t *testing.T) {
	t.Parallel()
	p := newParked(t)
	p.setWebhook(t, "http://127.0.0.1:9/hook")
	id := p.release(t, p.step)
	for range 2 {
		require.NoError(t, p.resumer.HandleResume(context.Background(), id))
	}
	tasks, err := asynq.NewInspectorFromRedisClient(p.rd.Client).ListPendingTasks(p.rd.Queues.Events)
	require.NoError(t, err)
	require.Len(t, tasks, 1)
	require.Equal(t, review.WebhookTaskID(id), tasks[0].ID)
	require.Equal(t, jobs.WebhookDelivery{}.Kind(), tasks[0].Type)
	require.Equal(t, review.WebhookMaxRetry, tasks[0].MaxRetry)
	args, err := jobs.Decode[jobs.WebhookDelivery](asynq.NewTask(tasks[0].Type, tasks[0].Payload))
	require.NoError(t, err)
	require.Equal(t, id, args.EventID)
}

func TestWebhookDeliveredSigned(t *testing.T) {
	t.Parallel()
	p := newParkedCommitted(t)
	rc := newReceiver(t, http.StatusNoContent)
	p.setWebhook(t, rc.URL+"/hooks/resume")
	id := p.release(t, p.step)
	p.startEvents(t, time.Hour)
	n, err := outbox.NewRelay(p.st, p.rd.Client, p.rd.Prefix, p.rd.Queues.Events, quiet).RunOnce(context.Background())
	require.NoError(t, err)
	require.Equal(t, 1, n)

	require.Eventually(t, func() bool { return len(p.deliveries(t, id)) == 1 }, 10*time.Second, 20*time.Millisecond)
	require.Equal(t, models.TaskRunning, p.taskStatus(t))
	got := rc.requests()
	require.Len(t, got, 1)
	req := got[0]
	require.NoError(t, webhook.VerifyLegacy([]byte(webhookSecret), req.header, req.body, 5*time.Minute))
	require.ErrorIs(t, webhook.VerifyLegacy([]byte("another secret"), req.header, req.body, 0), webhook.ErrBadSignature)
	require.Equal(t, id, req.header.Get(webhook.LegacyHeaderEventID))
	require.Equal(t, "application/json", req.header.Get("Content-Type"))

	var body map[string]any
	require.NoError(t, json.Unmarshal(req.body, &body))
	resolvedAt, err := time.Parse(time.RFC3339Nano, body["resolved_at"].(string))
	require.NoError(t, err)
	require.WithinDuration(t, time.Now(), resolvedAt, time.Minute)
	delete(body, "resolved_at")
	require.Equal(t, map[string]any{
		"id": id, "type": "task.resumed", "task_id": p.task.ID, "agent_id": p.tn.Agent.ID,
		"workspace_id": p.tn.Workspace.ID, "step_id": p.step.ID, "await_id": p.await.ID,
		"resolved_by": "user:" + p.tn.Admin.ID, "reason": "action", "action": "approve_invoice",
	}, body)

	d := p.deliveries(t, id)[0]
	require.Equal(t, 1, d.Attempt)
	require.Equal(t, http.StatusNoContent, d.StatusCode)
	require.Empty(t, d.Error)
	require.Equal(t, rc.URL+"/hooks/resume", d.URL)
	require.Equal(t, p.task.ID, d.TaskID)
}

func TestWebhookRetriedAfterServerError(t *testing.T) {
	t.Parallel()
	p := newParkedCommitted(t)
	rc := newReceiver(t, http.StatusInternalServerError, http.StatusOK)
	p.setWebhook(t, rc.URL)
	id := p.release(t, p.step)
	p.startEvents(t, 50*time.Millisecond)
	_, err := outbox.NewRelay(p.st, p.rd.Client, p.rd.Prefix, p.rd.Queues.Events, quiet).RunOnce(context.Background())
	require.NoError(t, err)

	require.Eventually(t, func() bool { return len(p.deliveries(t, id)) == 2 }, 15*time.Second, 20*time.Millisecond)
	time.Sleep(500 * time.Millisecond) // a success is not retried
	d := p.deliveries(t, id)
	require.Len(t, d, 2)
	require.Equal(t, 1, d[0].Attempt)
	require.Equal(t, http.StatusInternalServerError, d[0].StatusCode)
	require.Contains(t, d[0].Error, "500")
	require.Equal(t, 2, d[1].Attempt)
	require.Equal(t, http.StatusOK, d[1].StatusCode)
	require.Empty(t, d[1].Error)
	got := rc.requests()
	require.Len(t, got, 2)
	require.Equal(t, got[0].header.Get(webhook.LegacyHeaderEventID), got[1].header.Get(webhook.LegacyHeaderEventID))
	for _, r := range got {
		require.NoError(t, webhook.VerifyLegacy([]byte(webhookSecret), r.header, r.body, time.Minute))
	}
}

func TestWebhookAttemptIsRecordedBeforeItIsSent(t *testing.T) {
	t.Parallel()
	p := newParked(t)
	// While the POST is in flight (a worker killed now would never record
	// its outcome), the receiver finds the attempt already recorded.
	var during []models.WebhookDelivery
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if err := p.st.DB.Find(&during).Error; err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		w.WriteHeader(http.StatusNoContent)
	}))
	t.Cleanup(srv.Close)
	p.setWebhook(t, srv.URL)
	id := p.release(t, p.step)

	require.NoError(t, p.resumer.HandleWebhook(context.Background(), id))
	require.Len(t, during, 1, "the attempt was recorded before the request left")
	require.Equal(t, id, during[0].EventID)
	require.Equal(t, 1, during[0].Attempt)
	require.Nil(t, during[0].FinishedAt, "its outcome was not known yet")
	d := p.deliveries(t, id)
	require.Len(t, d, 1, "the same row was finished, not a second one added")
	require.Equal(t, during[0].ID, d[0].ID)
	require.Equal(t, http.StatusNoContent, d[0].StatusCode)
	require.NotNil(t, d[0].FinishedAt)
}

// TestWebhookRunTwiceAtOnceIsSentOnce: two runs of one delivery at once (a
// job the sweep re-created after Redis lost it, beside the run still
// posting) send the event once. The second finds the first's attempt
// recorded and unfinished and is retried after it, then finds it delivered.
func TestWebhookRunTwiceAtOnceIsSentOnce(t *testing.T) {
	t.Parallel()
	testkit.EachDialect(t, func(t *testing.T, st *store.Store) {
		p := newParkedOn(t, st)
		arrived, gate := make(chan struct{}, 4), make(chan struct{})
		var mu sync.Mutex
		posts := 0
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			mu.Lock()
			posts++
			mu.Unlock()
			arrived <- struct{}{}
			<-gate
			w.WriteHeader(http.StatusNoContent)
		}))
		t.Cleanup(srv.Close)
		var opened sync.Once
		open := func() { opened.Do(func() { close(gate) }) }
		t.Cleanup(open) // before srv.Close, which waits for its handlers
		p.setWebhook(t, srv.URL)
		id := p.release(t, p.step)

		first := make(chan error, 1)
		go func() { first <- p.resumer.HandleWebhook(context.Background(), id) }()
		select {
		case <-arrived:
		case <-time.After(10 * time.Second):
			t.Fatal("the first run's POST never arrived")
		}
		err := p.resumer.HandleWebhook(context.Background(), id)
		retry, ok := errors.AsType[*review.WebhookRetry](err)
		require.True(t, ok, "the second run waits for the first: %v", err)
		require.Greater(t, retry.Delay, review.WebhookInFlightFor-5*time.Second)
		require.LessOrEqual(t, retry.Delay, review.WebhookInFlightFor)

		open()
		require.NoError(t, <-first)
		require.NoError(t, p.resumer.HandleWebhook(context.Background(), id), "the retry finds it delivered")
		mu.Lock()
		require.Equal(t, 1, posts, "the event was sent once")
		mu.Unlock()
		d := p.deliveries(t, id)
		require.Len(t, d, 1)
		require.Equal(t, http.StatusNoContent, d[0].StatusCode)
	})
}

// TestWebhookAttemptLeftUnfinishedIsSentAgain: an attempt recorded and never
// finished (its worker killed mid-POST) holds the delivery back while it may
// still be in flight, and past WebhookInFlightFor the event is sent again,
// as the next attempt with the same webhook-id: at least once.
func TestWebhookAttemptLeftUnfinishedIsSentAgain(t *testing.T) {
	t.Parallel()
	p := newParked(t)
	rc := newReceiver(t, http.StatusOK)
	p.setWebhook(t, rc.URL)
	id := p.release(t, p.step)
	cut := models.WebhookDelivery{ID: models.NewID(), EventID: id, EventType: "task.resumed", AgentID: p.tn.Agent.ID,
		TaskID: p.task.ID, URL: rc.URL, Attempt: 1, CreatedAt: time.Now().UTC().Add(-time.Second)}
	require.NoError(t, p.st.DB.Create(&cut).Error)

	err := p.resumer.HandleWebhook(context.Background(), id)
	retry, ok := errors.AsType[*review.WebhookRetry](err)
	require.True(t, ok, "an attempt a second old may be in flight: %v", err)
	require.InDelta(t, (review.WebhookInFlightFor - time.Second).Seconds(), retry.Delay.Seconds(), 2)
	require.Empty(t, rc.requests())

	require.NoError(t, p.st.DB.Model(&cut).Update("created_at", time.Now().UTC().Add(-review.WebhookInFlightFor-time.Second)).Error)
	require.NoError(t, p.resumer.HandleWebhook(context.Background(), id))
	got := rc.requests()
	require.Len(t, got, 1, "the run that recorded it is taken to be gone")
	require.Equal(t, id, got[0].header.Get(webhook.HeaderID))
	d := p.deliveries(t, id)
	require.Len(t, d, 1)
	require.Equal(t, 2, d[0].Attempt)
	require.Equal(t, http.StatusOK, d[0].StatusCode)
}

func TestWebhookNotSentAgainAfterSuccess(t *testing.T) {
	t.Parallel()
	p := newParked(t)
	rc := newReceiver(t, http.StatusOK)
	p.setWebhook(t, rc.URL)
	id := p.release(t, p.step)
	for range 2 {
		require.NoError(t, p.resumer.HandleWebhook(context.Background(), id))
	}
	require.Len(t, rc.requests(), 1)
	require.Len(t, p.deliveries(t, id), 1)
}

func TestWebhookRedirectIsAFailedAttemptNotFollowed(t *testing.T) {
	t.Parallel()
	p := newParked(t)
	var moved sync.Map // method -> true, for requests that reached the redirect target
	mux := http.NewServeMux()
	mux.HandleFunc("/hook", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "/moved", http.StatusMovedPermanently)
	})
	mux.HandleFunc("/moved", func(w http.ResponseWriter, r *http.Request) {
		moved.Store(r.Method, true)
		w.WriteHeader(http.StatusOK)
	})
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	p.setWebhook(t, srv.URL+"/hook")
	id := p.release(t, p.step)

	err := p.resumer.HandleWebhook(context.Background(), id)
	require.Error(t, err, "a redirect is not a delivery")
	require.NotEqual(t, apperr.Invalid, apperr.CodeOf(err), "it is retried: the receiver may fix its URL")
	d := p.deliveries(t, id)
	require.Len(t, d, 1)
	require.Equal(t, http.StatusMovedPermanently, d[0].StatusCode)
	require.Contains(t, d[0].Error, "301")
	_, reached := moved.Load(http.MethodGet)
	require.False(t, reached, "the POST was not turned into a body-less GET of the redirect target")
}

func TestWebhookToRefusedAddressIsNotRetryable(t *testing.T) {
	t.Parallel()
	p := newParked(t)
	rc := newReceiver(t, http.StatusOK)
	p.setWebhook(t, rc.URL)
	id := p.release(t, p.step)

	err := p.newResumer(nil).HandleWebhook(context.Background(), id)
	require.Equal(t, apperr.Forbidden, apperr.CodeOf(err), "%v", err)
	require.Empty(t, rc.requests(), "loopback is refused unless configured")
	d := p.deliveries(t, id)
	require.Len(t, d, 1)
	require.Zero(t, d[0].StatusCode)
	require.Contains(t, d[0].Error, "refused address")
}

func TestWebhookWithoutSecretIsRefused(t *testing.T) {
	t.Parallel()
	p := newParked(t)
	rc := newReceiver(t, http.StatusOK)
	require.NoError(t, p.st.DB.Model(&models.Agent{}).Where("id = ?", p.tn.Agent.ID).Update("resume_webhook_url", rc.URL).Error)
	id := p.release(t, p.step)
	err := p.resumer.HandleWebhook(context.Background(), id)
	require.Equal(t, apperr.Invalid, apperr.CodeOf(err), "%v", err)
	require.Empty(t, rc.requests(), "an unsigned webhook is never sent")
}

func TestWebhookRetryDelay(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		n        int
		min, max time.Duration
	}{
		{0, time.Second, 1500 * time.Millisecond},
		{1, 2 * time.Second, 3 * time.Second},
		{5, 32 * time.Second, 48 * time.Second},
		{11, 2048 * time.Second, time.Hour},
		{12, time.Hour, time.Hour},
		{review.WebhookMaxRetry, time.Hour, time.Hour},
		{200, time.Hour, time.Hour},
	} {
		for range 50 {
			d := review.WebhookRetryDelay(tc.n)
			require.GreaterOrEqual(t, d, tc.min, "n=%d", tc.n)
			require.LessOrEqual(t, d, tc.max, "n=%d", tc.n)
		}
	}
}

func TestResumeOfDeletedTaskIsDropped(t *testing.T) {
	t.Parallel()
	p := newParked(t)
	rc := newReceiver(t, http.StatusOK)
	p.setWebhook(t, rc.URL)
	id := p.release(t, p.step)
	require.NoError(t, p.st.DB.Delete(&models.Task{}, "id = ?", p.task.ID).Error)

	require.NoError(t, p.resumer.HandleResume(context.Background(), id))
	_, err := asynq.NewInspectorFromRedisClient(p.rd.Client).GetTaskInfo(p.rd.Queues.Events, review.WebhookTaskID(id))
	require.Error(t, err, "no delivery is enqueued for a deleted task")
	require.NoError(t, p.resumer.HandleWebhook(context.Background(), id))
	require.Empty(t, rc.requests())
}
