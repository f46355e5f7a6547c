package worker_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"
	"gorm.io/gorm"

	"github.com/appruntime/appruntime/internal/crypt"
	"github.com/appruntime/appruntime/internal/outbox"
	"github.com/appruntime/appruntime/internal/review"
	"github.com/appruntime/appruntime/internal/session"
	"github.com/appruntime/appruntime/internal/store"
	"github.com/appruntime/appruntime/internal/testkit"
	"github.com/appruntime/appruntime/models"
)

// TestOwedJobsSurviveAFlushedRedis: with an await expiry relayed (scheduled
// in Redis only) and a review claim held, Redis loses everything; within a
// sweep interval after, the expiry fires once (its webhook too) and the
// claim is cleared.
func TestOwedJobsSurviveAFlushedRedis(t *testing.T) {
	f, own := newSweepFixture(t, nil)
	db := f.p.Store.DB

	_, aw := f.parked(t, 3*time.Second)
	claimed, _ := f.parked(t, 0)
	claim, err := f.p.Queue.Next(context.Background(), f.tn.Workspace.ID, f.tn.Admin.ID)
	require.NoError(t, err)
	require.NotNil(t, claim)

	stop := f.startWorker(t)
	require.Eventually(t, func() bool {
		var n int64
		db.Model(&models.Outbox{}).Where("kind = ? AND sent_at IS NOT NULL", outbox.KindAwaitExpiry).Count(&n)
		return n == 1
	}, 10*time.Second, 50*time.Millisecond)
	stop()

	own.FlushAll()              // Redis loses every scheduled job
	time.Sleep(3 * time.Second) // both are due now

	f.startWorker(t)
	require.Eventually(t, func() bool {
		var a models.TaskAwait
		db.Where("id = ?", aw.ID).Take(&a)
		var tk models.Task
		db.Where("id = ?", claimed.ID).Take(&tk)
		return a.Status == models.AwaitResolved && tk.ClaimedBy == nil && len(f.hook.received()) == 1
	}, 10*time.Second, 100*time.Millisecond, "within a sweep interval after Redis returns")
	time.Sleep(3 * time.Second) // more sweeps: nothing twice
	var a models.TaskAwait
	require.NoError(t, db.Where("id = ?", aw.ID).Take(&a).Error)
	require.Equal(t, review.ReasonExpired, a.Reason)
	require.Len(t, f.hook.received(), 1, "the expiry's webhook is sent once")
	var open int64
	require.NoError(t, db.Model(&models.Outbox{}).Where("done_at IS NULL").Where("kind IN ?",
		[]string{outbox.KindAwaitExpiry, outbox.KindResumeEvent}).Count(&open).Error)
	require.Zero(t, open, "every owed row is done")
}

// newSweepFixture is an expiry fixture on a Redis of its own (FLUSHALL
// takes nothing from other tests), sweeping every second, whose agent's webhook is hook's; failing, when
// not nil, answers the webhook's requests before hook records them.
func newSweepFixture(t *testing.T, failing func(http.ResponseWriter) bool) (*expiryFixture, *testkit.OwnRedis) {
	t.Helper()
	own := testkit.StartRedis(t)
	return newSweepFixtureWith(t, testkit.Schema(t), own.URL, own.Client(), failing), own
}

// newSweepFixtureWith is newSweepFixture on st and the Redis at redisURL.
func newSweepFixtureWith(t *testing.T, st *store.Store, redisURL string, client redis.UniversalClient, failing func(http.ResponseWriter) bool) *expiryFixture {
	t.Helper()
	cfg := testkit.Config(testkit.DatabaseURL(), redisURL)
	cfg.OutboundAllow = []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}
	cfg.ReviewClaimFor = 3 * time.Second
	cfg.SweepInterval = time.Second
	f := &expiryFixture{p: newPlatformWith(t, cfg, st, testkit.RedisOn(client)), hook: &hookRecorder{}}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if failing != nil && failing(w) {
			return
		}
		f.hook.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	f.tn = testkit.NewTenant(t, f.p.Store.DB)
	box, err := crypt.New(cfg.SecretsKey)
	require.NoError(t, err)
	sealed, err := box.Seal([]byte("sweep-test-webhook-secret-0123456789"))
	require.NoError(t, err)
	require.NoError(t, f.p.Store.DB.Model(&models.Agent{}).Where("id = ?", f.tn.Agent.ID).
		Updates(map[string]any{"resume_webhook_url": srv.URL, "webhook_secret_enc": sealed}).Error)
	return f
}

// TestAWebhookRetryKeepsItsCountAndScheduleAcrossAFlushedRedis: a
// receiver failing its first three deliveries; after the second failure
// Redis loses the retry. Once it is back the delivery goes on at attempt 3,
// not before the time attempt 2 recorded, and succeeds at attempt 4: one
// success, no attempt numbered twice.
func TestAWebhookRetryKeepsItsCountAndScheduleAcrossAFlushedRedis(t *testing.T) {
	var fails atomic.Int32
	f, own := newSweepFixture(t, func(w http.ResponseWriter) bool {
		if fails.Add(1) <= 3 {
			w.WriteHeader(http.StatusServiceUnavailable)
			return true
		}
		return false
	})
	db := f.p.Store.DB
	f.parked(t, 500*time.Millisecond)

	deliveries := func() []models.WebhookDelivery {
		var rows []models.WebhookDelivery
		require.NoError(t, db.Where("agent_id = ?", f.tn.Agent.ID).Order("attempt").Find(&rows).Error)
		return rows
	}
	stop := f.startWorker(t)
	require.Eventually(t, func() bool {
		rows := deliveries()
		return len(rows) == 2 && rows[1].NextAttemptAt != nil
	}, 20*time.Second, 20*time.Millisecond, "two failed attempts, the third scheduled")
	stop()
	own.FlushAll()
	due := *deliveries()[1].NextAttemptAt

	f.startWorker(t)
	require.Eventually(t, func() bool { return len(f.hook.received()) == 1 }, 30*time.Second, 50*time.Millisecond,
		"delivered after Redis returned")
	time.Sleep(2 * time.Second) // more sweeps: nothing sent twice
	rows := deliveries()
	require.Len(t, rows, 4, "attempts 1 and 2 before the flush, 3 (failed) and 4 (delivered) after")
	for i, d := range rows {
		require.Equal(t, i+1, d.Attempt, "attempt numbers go on from Postgres's count")
		require.Equal(t, rows[0].EventID, d.EventID, "one event")
	}
	require.Equal(t, 503, rows[2].StatusCode)
	require.Equal(t, 200, rows[3].StatusCode)
	require.False(t, rows[2].CreatedAt.Before(due.Add(-50*time.Millisecond)),
		"attempt 3 at %s keeps the schedule attempt 2 recorded (%s)", rows[2].CreatedAt, due)
	require.Len(t, f.hook.received(), 1)
	require.EqualValues(t, 4, fails.Load(), "the receiver saw four requests")
}

// TestAResumeInFlightSurvivesFLUSHALL: an approval is done and its resume
// job relayed to Redis, not yet run, when Redis loses everything (with an
// await expiry relayed before it, due earlier). Within a sweep interval
// after, both run once, in the order of their due times: the expiry's
// webhook first, then the approval's; the task is resumed once.
func TestAResumeInFlightSurvivesFLUSHALL(t *testing.T) {
	f, own := newSweepFixture(t, nil)
	resumeInFlightSurvives(t, f, own.FlushAll)
}

// TestAResumeInFlightSurvivesARedisRestart is the same when Redis, kept
// without persistence, is killed and comes back empty.
func TestAResumeInFlightSurvivesARedisRestart(t *testing.T) {
	f, own := newSweepFixture(t, nil)
	resumeInFlightSurvives(t, f, func() { own.Restart(500 * time.Millisecond) })
}

// TestAResumeInFlightSurvivesFLUSHALLInDevMode is the same on dev mode's
// engines: SQLite and the in-process Redis (miniredis).
func TestAResumeInFlightSurvivesFLUSHALLInDevMode(t *testing.T) {
	url, client := devRedis(t)
	f := newSweepFixtureWith(t, testkit.SQLite(t), url, client, nil)
	resumeInFlightSurvives(t, f, func() { require.NoError(t, client.FlushAll(context.Background()).Err()) })
}

func resumeInFlightSurvives(t *testing.T, f *expiryFixture, flushAll func()) {
	t.Helper()
	db := f.p.Store.DB
	ctx := context.Background()

	_, expiring := f.parked(t, 200*time.Millisecond)
	time.Sleep(300 * time.Millisecond) // the expiry is due before the approval
	approved, _ := f.parked(t, 0)
	var step models.Step
	require.NoError(t, db.Where("task_id = ?", approved.ID).Take(&step).Error)
	claims := session.Claims{TaskID: approved.ID, AgentID: f.tn.Agent.ID, WorkspaceID: f.tn.Workspace.ID, StepID: step.ID}
	require.NoError(t, f.p.Store.Tx(ctx, func(tx *gorm.DB) error {
		_, _, err := review.ResolveSessionAwait(ctx, tx, claims, "user:"+f.tn.Admin.ID, "approve")
		return err
	}))
	// No worker runs: the relay moves both rows to Redis, where they wait.
	_, err := f.p.Relay.RunOnce(ctx)
	require.NoError(t, err)
	var sent int64
	require.NoError(t, db.Model(&models.Outbox{}).Where("sent_at IS NOT NULL AND done_at IS NULL").Count(&sent).Error)
	require.EqualValues(t, 2, sent, "the expiry and the resume are in Redis only")

	flushAll()
	f.startWorker(t)
	require.Eventually(t, func() bool { return len(f.hook.received()) == 2 }, 10*time.Second, 50*time.Millisecond,
		"both delivered within a sweep interval")
	time.Sleep(3 * time.Second) // more sweeps: nothing twice
	require.Len(t, f.hook.received(), 2, "each webhook once")
	// The expiry ran before the approval's resume: the await it expired
	// was resolved before the approval's webhook was delivered (the
	// expiry's own webhook follows through a resume job of its own).
	var expired models.TaskAwait
	require.NoError(t, db.Where("id = ?", expiring.ID).Take(&expired).Error)
	require.Equal(t, review.ReasonExpired, expired.Reason)
	var delivered models.WebhookDelivery
	require.NoError(t, db.Where("task_id = ?", approved.ID).Take(&delivered).Error)
	require.True(t, expired.ResolvedAt.Before(delivered.CreatedAt), "the expiry (due first) ran first: %s, resume delivered %s",
		expired.ResolvedAt, delivered.CreatedAt)
	var resumed int64
	require.NoError(t, db.Model(&models.FeedEvent{}).Where("task_id = ? AND type = ?", approved.ID, models.FeedTaskResumed).
		Count(&resumed).Error)
	require.EqualValues(t, 1, resumed, "the task is resumed once")
	var open int64
	require.NoError(t, db.Model(&models.Outbox{}).Where("done_at IS NULL").Count(&open).Error)
	require.Zero(t, open, "every owed row is done")
}
