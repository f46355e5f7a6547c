package worker_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/appruntime/appruntime/internal/admin"
	"github.com/appruntime/appruntime/internal/config"
	"github.com/appruntime/appruntime/internal/platform"
	"github.com/appruntime/appruntime/internal/rdb"
	"github.com/appruntime/appruntime/internal/store"
	"github.com/appruntime/appruntime/internal/testkit"
	"github.com/appruntime/appruntime/jobs"
	"github.com/appruntime/appruntime/models"
)

// TestTheWorkerEmailsAPoolsWaitingWork runs a worker on Postgres and in the
// dev mode (SQLite and the in-process Redis) with SMTP_URL naming a real
// SMTP server on loopback: a pool an admin gave a wait threshold and an
// address gets one digest of the task waiting past it, and the pass that
// runs again at once sends nothing more.
func TestTheWorkerEmailsAPoolsWaitingWork(t *testing.T) {
	t.Parallel()
	testkit.EachDialect(t, func(t *testing.T, st *store.Store) {
		sink := testkit.NewSMTPSink(t)
		cfg := testkit.Config(testkit.DatabaseURL(), testkit.RedisURL())
		cfg.SMTPURL, cfg.SMTPFrom, cfg.NotifyInterval = sink.URL, "appruntime@example.test", 200*time.Millisecond
		p := newPlatformFor(t, cfg, st)

		tn := testkit.NewTenant(t, st.DB)
		threshold := admin.MinPoolThreshold
		pool, err := p.Admin.CreateReviewPool(context.Background(), tn.Workspace.ID, "user:"+tn.Admin.ID, admin.ReviewPoolInput{
			Name: "invoices", WaitThresholdSeconds: &threshold, NotifyEmails: []string{"lead@example.test"}})
		require.NoError(t, err)
		task := models.Task{ID: models.NewID(), WorkspaceID: tn.Workspace.ID, AgentID: tn.Agent.ID, Title: "Invoice 12 from Umbrella",
			Status: models.TaskWaitingForInput}
		require.NoError(t, st.DB.Create(&task).Error)
		step := models.Step{ID: models.NewID(), TaskID: task.ID, Kind: models.StepAppTool, Status: models.StepCompleted}
		require.NoError(t, st.DB.Create(&step).Error)
		require.NoError(t, st.DB.Create(&models.TaskAwait{ID: models.NewID(), TaskID: task.ID, SourceType: models.AwaitSourceAppTool,
			CorrelationKey: step.ID, Status: models.AwaitPending, CreatedAt: time.Now().UTC().Add(-2 * time.Minute)}).Error)
		require.NoError(t, st.DB.Create(&models.TaskReviewPool{TaskID: task.ID, PoolID: pool.ID, TaskCreatedAt: task.CreatedAt}).Error)

		runWorker(t, p)
		require.Eventually(t, func() bool { return len(sink.Mail()) == 1 }, 20*time.Second, 50*time.Millisecond)
		m := sink.Mail()[0]
		require.Equal(t, []string{"lead@example.test"}, m.To)
		require.Equal(t, "appruntime@example.test", m.From)
		require.True(t, strings.Contains(m.Data, "Invoice 12 from Umbrella"), m.Data)
		var d models.ReviewPoolDigest
		require.Eventually(t, func() bool {
			return st.DB.Where("pool_id = ? AND delivered_at IS NOT NULL", pool.ID).Take(&d).Error == nil
		}, 10*time.Second, 50*time.Millisecond)
		require.Equal(t, models.DigestEmail, d.Channel)
		time.Sleep(3 * cfg.NotifyInterval) // passes that find nothing new
		require.Len(t, sink.Mail(), 1)
	})
}

// newPlatformFor builds a platform on st and, with Postgres, the shared
// Redis; with SQLite, dev mode's in-process Redis.
func newPlatformFor(t *testing.T, cfg *config.Config, st *store.Store) *platform.Platform {
	t.Helper()
	if st.Dialect == config.Postgres {
		return newPlatformWith(t, cfg, st, testkit.Redis(t))
	}
	url, client := devRedis(t)
	cfg.RedisURL = url
	return newPlatformWith(t, cfg, st, testkit.RedisEnv{Client: client, Prefix: "dev:", Queues: jobs.PrefixedQueues("dev_")})
}

// devRedis starts dev mode's in-process Redis for the test and opens the
// platform's client on it.
func devRedis(t *testing.T) (string, redis.UniversalClient) {
	t.Helper()
	emb, err := rdb.StartEmbedded()
	require.NoError(t, err)
	t.Cleanup(emb.Close)
	client, err := rdb.Open(context.Background(), emb.URL)
	require.NoError(t, err)
	t.Cleanup(func() { _ = client.Close() })
	return emb.URL, client
}
