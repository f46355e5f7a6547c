package worker_test

import (
	"context"
	"net/http/httptest"
	"net/netip"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/appruntime/appruntime/internal/crypt"
	"github.com/appruntime/appruntime/internal/outbox"
	"github.com/appruntime/appruntime/internal/review"
	"github.com/appruntime/appruntime/internal/testkit"
	"github.com/appruntime/appruntime/models"
)

// sweepRedisDB is the Redis database this test flushes: its own number, so
// the flush takes nothing from other tests sharing the server.
const sweepRedisDB = "redis://127.0.0.1:6379/11"

// TestOwedJobsSurviveAFlushedRedis: with an await expiry relayed (scheduled
// in Redis only) and a review claim held, Redis loses everything; within a
// sweep interval after, the expiry fires once (its webhook too) and the
// claim is cleared.
func TestOwedJobsSurviveAFlushedRedis(t *testing.T) {
	cfg := testkit.Config(testkit.DatabaseURL(), sweepRedisDB)
	cfg.OutboundAllow = []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}
	cfg.ReviewClaimFor = 3 * time.Second
	cfg.SweepInterval = time.Second
	f := &expiryFixture{p: newPlatform(t, cfg), hook: &hookRecorder{}}
	srv := newHookServer(t, f.hook)
	f.tn = testkit.NewTenant(t, f.p.Store.DB)
	box, err := crypt.New(cfg.SecretsKey)
	require.NoError(t, err)
	sealed, err := box.Seal([]byte("sweep-test-webhook-secret-0123456789"))
	require.NoError(t, err)
	db := f.p.Store.DB
	require.NoError(t, db.Model(&models.Agent{}).Where("id = ?", f.tn.Agent.ID).
		Updates(map[string]any{"resume_webhook_url": srv, "webhook_secret_enc": sealed}).Error)

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

	// Redis loses every scheduled job.
	opt, err := redis.ParseURL(sweepRedisDB)
	require.NoError(t, err)
	rdb := redis.NewClient(opt)
	defer rdb.Close()
	require.NoError(t, rdb.FlushDB(context.Background()).Err())
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

func newHookServer(t *testing.T, h *hookRecorder) string {
	t.Helper()
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return srv.URL
}
