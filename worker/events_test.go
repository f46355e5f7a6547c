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
	"github.com/appruntime/appruntime/internal/outbox"
	"github.com/appruntime/appruntime/internal/review"
	"github.com/appruntime/appruntime/internal/session"
	"github.com/appruntime/appruntime/internal/testkit"
	"github.com/appruntime/appruntime/internal/webhook"
	"github.com/appruntime/appruntime/models"
	"github.com/appruntime/appruntime/worker"
)

// TestReleasedAwaitReachesTheWebhook runs a whole worker: a released await's
// outbox row is relayed, the resume job puts the task back to running and the
// agent's webhook receives the signed event, once.
func TestReleasedAwaitReachesTheWebhook(t *testing.T) {
	t.Parallel()
	cfg := testkit.Config(testkit.DatabaseURL(), testkit.RedisURL())
	cfg.OutboundAllow = []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}
	p := newPlatform(t, cfg)
	st := p.Store

	var mu sync.Mutex
	var got []*http.Request
	var bodies [][]byte
	hook := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		mu.Lock()
		got, bodies = append(got, r), append(bodies, body)
		mu.Unlock()
	}))
	t.Cleanup(hook.Close)

	tn := testkit.NewTenant(t, st.DB)
	box, err := crypt.New(cfg.SecretsKey)
	require.NoError(t, err)
	secret := []byte("whsec_worker_test_0123456789abcdefghijklmnopqrstuv") // a pre-keyring secret: its bytes are the key
	sealed, err := box.Seal(secret)
	require.NoError(t, err)
	require.NoError(t, st.DB.Model(&models.Agent{}).Where("id = ?", tn.Agent.ID).
		Updates(map[string]any{"resume_webhook_url": hook.URL, "webhook_secret_enc": sealed}).Error)
	task := models.Task{ID: models.NewID(), WorkspaceID: tn.Workspace.ID, AgentID: tn.Agent.ID, Status: models.TaskWaitingForInput}
	require.NoError(t, st.DB.Create(&task).Error)
	step := models.Step{ID: models.NewID(), TaskID: task.ID, Kind: models.StepAppTool, Status: models.StepCompleted}
	require.NoError(t, st.DB.Create(&step).Error)
	require.NoError(t, st.DB.Create(&models.TaskAwait{ID: models.NewID(), TaskID: task.ID,
		SourceType: models.AwaitSourceAppTool, CorrelationKey: step.ID, Status: models.AwaitPending}).Error)

	// The await is released while the worker is down.
	ctx := context.Background()
	claims := session.Claims{TaskID: task.ID, AgentID: tn.Agent.ID, WorkspaceID: tn.Workspace.ID, StepID: step.ID}
	require.NoError(t, st.Tx(ctx, func(tx *gorm.DB) error {
		_, _, err := review.ResolveSessionAwait(ctx, tx, claims, "user:"+tn.Admin.ID, "approve")
		return err
	}))
	var row models.Outbox
	require.NoError(t, st.DB.Where("kind = ?", outbox.KindResumeEvent).Take(&row).Error)

	runCtx, stop := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- worker.New(p.WorkerServices()).Run(runCtx) }()
	t.Cleanup(func() {
		stop()
		require.NoError(t, <-done)
	})

	require.Eventually(t, func() bool {
		var n int64
		st.DB.Model(&models.WebhookDelivery{}).Where("event_id = ? AND status_code = 200", row.ID).Count(&n)
		return n == 1
	}, 20*time.Second, 50*time.Millisecond)
	time.Sleep(500 * time.Millisecond)

	mu.Lock()
	defer mu.Unlock()
	require.Len(t, got, 1)
	require.NoError(t, webhook.VerifyLegacy(secret, got[0].Header, bodies[0], time.Minute))
	var ev review.ResumeEvent
	require.NoError(t, json.Unmarshal(bodies[0], &ev))
	require.Equal(t, row.ID, ev.ID)
	require.Equal(t, task.ID, ev.TaskID)

	var after models.Task
	require.NoError(t, st.DB.Where("id = ?", task.ID).Take(&after).Error)
	require.Equal(t, models.TaskRunning, after.Status)
	var resumed int64
	require.NoError(t, st.DB.Model(&models.FeedEvent{}).Where("task_id = ? AND type = ?", task.ID, models.FeedTaskResumed).Count(&resumed).Error)
	require.EqualValues(t, 1, resumed)
	var sent models.Outbox
	require.NoError(t, st.DB.Where("id = ?", row.ID).Take(&sent).Error)
	require.NotNil(t, sent.SentAt)
}
