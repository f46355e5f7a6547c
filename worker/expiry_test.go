package worker_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"gorm.io/gorm"

	"github.com/appruntime/appruntime/internal/crypt"
	"github.com/appruntime/appruntime/internal/feed"
	"github.com/appruntime/appruntime/internal/outbox"
	"github.com/appruntime/appruntime/internal/platform"
	"github.com/appruntime/appruntime/internal/review"
	"github.com/appruntime/appruntime/internal/testkit"
	"github.com/appruntime/appruntime/internal/webhook"
	"github.com/appruntime/appruntime/models"
	"github.com/appruntime/appruntime/worker"
)

// hookRecorder is an agent's resume webhook on loopback, keeping the
// events it was sent.
type hookRecorder struct {
	mu     sync.Mutex
	events []review.ResumeEvent
}

func (h *hookRecorder) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	var ev review.ResumeEvent
	_ = json.Unmarshal(body, &ev)
	h.mu.Lock()
	h.events = append(h.events, ev)
	h.mu.Unlock()
}

func (h *hookRecorder) received() []review.ResumeEvent {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]review.ResumeEvent(nil), h.events...)
}

// expiryFixture is a platform whose agent has a webhook, and a way to run
// and stop workers on it.
type expiryFixture struct {
	p    *platform.Platform
	tn   testkit.Tenant
	hook *hookRecorder
}

func newExpiryFixture(t *testing.T, claimFor time.Duration) *expiryFixture {
	t.Helper()
	cfg := testkit.Config(testkit.DatabaseURL(), testkit.RedisURL())
	cfg.OutboundAllow = []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}
	cfg.ReviewClaimFor = claimFor
	f := &expiryFixture{p: newPlatform(t, cfg), hook: &hookRecorder{}}
	srv := httptest.NewServer(f.hook)
	t.Cleanup(srv.Close)
	f.tn = testkit.NewTenant(t, f.p.Store.DB)
	box, err := crypt.New(cfg.SecretsKey)
	require.NoError(t, err)
	sealed, err := box.Seal([]byte("expiry-test-webhook-secret-0123456789"))
	require.NoError(t, err)
	require.NoError(t, f.p.Store.DB.Model(&models.Agent{}).Where("id = ?", f.tn.Agent.ID).
		Updates(map[string]any{"resume_webhook_url": srv.URL, "webhook_secret_enc": sealed}).Error)
	return f
}

// parked makes a task parked on an app-tool step; scheduleIn, when not
// zero, writes its await's expiry in the same transaction, as a tool with
// await_expiry_seconds does.
func (f *expiryFixture) parked(t *testing.T, expireIn time.Duration) (models.Task, models.TaskAwait) {
	t.Helper()
	task := models.Task{ID: models.NewID(), WorkspaceID: f.tn.Workspace.ID, AgentID: f.tn.Agent.ID, Status: models.TaskWaitingForInput}
	step := models.Step{ID: models.NewID(), TaskID: task.ID, Kind: models.StepAppTool, Status: models.StepCompleted}
	aw := models.TaskAwait{ID: models.NewID(), TaskID: task.ID, SourceType: models.AwaitSourceAppTool, CorrelationKey: step.ID, Status: models.AwaitPending}
	require.NoError(t, f.p.Store.Tx(context.Background(), func(tx *gorm.DB) error {
		for _, row := range []any{&task, &step, &aw} {
			if err := tx.Create(row).Error; err != nil {
				return err
			}
		}
		if expireIn > 0 {
			return review.ScheduleAwaitExpiry(tx, f.tn.Workspace.ID, aw.ID, time.Now().Add(expireIn))
		}
		return nil
	}))
	return task, aw
}

// startWorker runs a worker until the returned stop is called.
func (f *expiryFixture) startWorker(t *testing.T) (stop func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- worker.New(f.p.WorkerServices()).Run(ctx) }()
	var once sync.Once
	stop = func() {
		once.Do(func() {
			cancel()
			require.NoError(t, <-done)
		})
	}
	t.Cleanup(stop)
	return stop
}

func TestAwaitExpiryFiresAfterAWorkerRestart(t *testing.T) {
	t.Parallel()
	f := newExpiryFixture(t, 0)
	db := f.p.Store.DB
	task, aw := f.parked(t, 4*time.Second)
	keep, kept := f.parked(t, time.Hour)

	// The first worker relays the expiry: it is scheduled in Redis, not
	// polled for. Then that worker goes away before it fires.
	stop := f.startWorker(t)
	require.Eventually(t, func() bool {
		var n int64
		db.Model(&models.Outbox{}).Where("kind = ? AND sent_at IS NOT NULL", outbox.KindAwaitExpiry).Count(&n)
		return n == 2
	}, 10*time.Second, 50*time.Millisecond)
	stop()
	var still models.TaskAwait
	require.NoError(t, db.Where("id = ?", aw.ID).Take(&still).Error)
	require.Equal(t, models.AwaitPending, still.Status, "nothing fires before its time")

	// A new worker fires it at its time.
	f.startWorker(t)
	require.Eventually(t, func() bool {
		for _, ev := range f.hook.received() {
			if ev.AwaitID == aw.ID {
				return true
			}
		}
		return false
	}, 30*time.Second, 100*time.Millisecond)
	require.NoError(t, db.Where("id = ?", aw.ID).Take(&still).Error)
	require.Equal(t, models.AwaitResolved, still.Status)
	require.Equal(t, review.ReasonExpired, still.Reason)
	require.Equal(t, review.ExpiryActor, still.ResolvedBy)
	ev := f.hook.received()[0]
	require.Equal(t, webhook.TaskExpired, ev.Type, "an expiry is task.expired (docs/agent-platforms.md#webhook-event-catalogue)")
	require.Equal(t, review.ReasonExpired, ev.Reason)

	// The task runs again, and the pull endpoint shows why.
	require.Eventually(t, func() bool {
		var after models.Task
		db.Where("id = ?", task.ID).Take(&after)
		return after.Status == models.TaskRunning
	}, 10*time.Second, 50*time.Millisecond)
	page, err := feed.AgentTaskEvents(context.Background(), db, f.tn.Workspace.ID, f.tn.Agent.ID, task.ID, 0)
	require.NoError(t, err)
	var reasons []string
	for _, e := range page.Events {
		var p struct {
			Reason string `json:"reason"`
		}
		require.NoError(t, e.Payload.Decode(&p))
		reasons = append(reasons, e.Type+":"+p.Reason)
	}
	require.Equal(t, []string{"await_resolved:expired", "task_resumed:expired"}, reasons)

	// The other await's time has not come.
	var other models.TaskAwait
	require.NoError(t, db.Where("id = ?", kept.ID).Take(&other).Error)
	require.Equal(t, models.AwaitPending, other.Status)
	_ = keep
}

func TestAwaitExpiryAfterTheReviewFinishedDoesNothing(t *testing.T) {
	t.Parallel()
	f := newExpiryFixture(t, 0)
	_, aw := f.parked(t, time.Second)
	released, err := f.p.Parked.Release(context.Background(), f.tn.Workspace.ID, aw.ID, "user:"+f.tn.Admin.ID, "released before it expired")
	require.NoError(t, err)
	require.Equal(t, review.ReasonAdminRelease, released.Reason)
	var row models.Outbox
	require.NoError(t, f.p.Store.DB.Where("kind = ?", outbox.KindAwaitExpiry).Take(&row).Error)
	require.NoError(t, f.p.Parked.Expire(context.Background(), row.ID))
	var after models.TaskAwait
	require.NoError(t, f.p.Store.DB.Where("id = ?", aw.ID).Take(&after).Error)
	require.Equal(t, review.ReasonAdminRelease, after.Reason)
	var resumes int64
	require.NoError(t, f.p.Store.DB.Model(&models.Outbox{}).Where("kind = ?", outbox.KindResumeEvent).Count(&resumes).Error)
	require.EqualValues(t, 1, resumes, "only the admin's release resumes the agent")
}

// TestAnExpiredClaimIsClearedByTheSweep: a worker running before a claim's
// time leaves it; one sweeping after clears it (no job per claim: the
// claim was free at its time anyway).
func TestAnExpiredClaimIsClearedByTheSweep(t *testing.T) {
	t.Parallel()
	f := newExpiryFixture(t, 3*time.Second)
	db := f.p.Store.DB
	task, _ := f.parked(t, 0)
	claim, err := f.p.Queue.Next(context.Background(), f.tn.Workspace.ID, f.tn.Admin.ID)
	require.NoError(t, err)
	require.NotNil(t, claim)
	require.Equal(t, task.ID, claim.TaskID)

	stop := f.startWorker(t)
	time.Sleep(500 * time.Millisecond)
	stop()
	var row models.Task
	require.NoError(t, db.Where("id = ?", task.ID).Take(&row).Error)
	require.NotNil(t, row.ClaimedBy, "not before its time")
	time.Sleep(time.Until(claim.ClaimExpiresAt))
	f.startWorker(t) // each pass also runs when the worker starts
	require.Eventually(t, func() bool {
		row = models.Task{}
		db.Where("id = ?", task.ID).Take(&row)
		return row.ClaimedBy == nil
	}, 10*time.Second, 100*time.Millisecond)
	require.Nil(t, row.ClaimExpiresAt)
	require.NotNil(t, row.AssignedTo, "the assignment stays: the task still sorts first for its reviewer")
	require.Equal(t, f.tn.Admin.ID, *row.AssignedTo)
}

func TestAdminAbortReachesTheAgent(t *testing.T) {
	t.Parallel()
	f := newExpiryFixture(t, 0)
	task, aw := f.parked(t, 0)
	f.startWorker(t)
	_, err := f.p.Parked.Abort(context.Background(), f.tn.Workspace.ID, aw.ID, "user:"+f.tn.Admin.ID, "duplicate")
	require.NoError(t, err)
	require.Eventually(t, func() bool { return len(f.hook.received()) == 1 }, 20*time.Second, 50*time.Millisecond)
	ev := f.hook.received()[0]
	require.Equal(t, review.AbortEventType, ev.Type)
	require.Equal(t, review.ReasonAdminAbort, ev.Reason)
	require.Equal(t, task.ID, ev.TaskID)
	var after models.Task
	require.NoError(t, f.p.Store.DB.Where("id = ?", task.ID).Take(&after).Error)
	require.Equal(t, models.TaskFailed, after.Status, "an abort resumes nothing")
	var resumed int64
	require.NoError(t, f.p.Store.DB.Model(&models.FeedEvent{}).Where("task_id = ? AND type = ?", task.ID, models.FeedTaskResumed).Count(&resumed).Error)
	require.Zero(t, resumed)
}
