package worker_test

import (
	"context"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/appruntime/appruntime/internal/config"
	"github.com/appruntime/appruntime/internal/logging"
	"github.com/appruntime/appruntime/internal/outbox"
	"github.com/appruntime/appruntime/internal/platform"
	"github.com/appruntime/appruntime/internal/store"
	"github.com/appruntime/appruntime/internal/testkit"
	"github.com/appruntime/appruntime/models"
	"github.com/appruntime/appruntime/worker"
)

// TestAWorkerRecordsAbandonedWritesAndPrunesTheOutboxWhenItStarts: a write
// intent whose process is gone becomes an outcome-unknown feed row, and a
// sent outbox row past OUTBOX_RETENTION is deleted, with no request needed.
func TestAWorkerRecordsAbandonedWritesAndPrunesTheOutboxWhenItStarts(t *testing.T) {
	t.Parallel()
	cfg := testkit.Config(testkit.DatabaseURL(), testkit.RedisURL())
	cfg.OutboxRetention = 48 * time.Hour
	p := newPlatform(t, cfg)
	st := p.Store

	tn := testkit.NewTenant(t, st.DB)
	task := models.Task{ID: models.NewID(), WorkspaceID: tn.Workspace.ID, AgentID: tn.Agent.ID, Status: models.TaskRunning}
	require.NoError(t, st.DB.Create(&task).Error)
	step := models.Step{ID: models.NewID(), TaskID: task.ID, Kind: models.StepAppTool, Status: models.StepCompleted}
	require.NoError(t, st.DB.Create(&step).Error)
	// Intents of owners that hold no lock: their processes are gone. One
	// from before intent batches, one of a batch.
	require.NoError(t, st.DB.Create(&models.WriteIntent{ID: models.NewID(), Owner: models.NewID(), TaskID: task.ID,
		StepID: step.ID, Name: "set_status", Actor: "user:x", Payload: models.MustJSON(map[string]any{"verb": "write"}),
		CreatedAt: time.Now().UTC()}).Error)
	require.NoError(t, st.DB.Create(&models.WriteIntentBatch{ID: models.NewID(), Owner: models.NewID(), CreatedAt: time.Now().UTC(),
		Intents: `[{"id":"` + models.NewID() + `","task_id":"` + task.ID + `","step_id":"` + step.ID + `","name":"set_status","actor":"user:x","payload":{"verb":"write"}}]`}).Error)
	sentAt := time.Now().UTC().Add(-72 * time.Hour)
	old := models.Outbox{ID: models.NewID(), Kind: outbox.KindSummary, Payload: models.MustJSON(map[string]any{}),
		CreatedAt: sentAt, SentAt: &sentAt, DoneAt: &sentAt}
	require.NoError(t, st.DB.Create(&old).Error)

	runWorker(t, p)
	require.Eventually(t, func() bool {
		var unknown, intents, batches, outboxRows int64
		st.DB.Model(&models.FeedEvent{}).Where("task_id = ? AND type = ?", task.ID, models.FeedAgentActionUnknown).Count(&unknown)
		st.DB.Model(&models.WriteIntent{}).Count(&intents)
		st.DB.Model(&models.WriteIntentBatch{}).Count(&batches)
		st.DB.Model(&models.Outbox{}).Count(&outboxRows)
		return unknown == 2 && intents == 0 && batches == 0 && outboxRows == 0
	}, 20*time.Second, 50*time.Millisecond)
}

// runWorker runs p's worker until the test ends.
func runWorker(t *testing.T, p *platform.Platform) {
	t.Helper()
	ctx, stop := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- worker.New(p.WorkerServices()).Run(ctx) }()
	t.Cleanup(func() {
		stop()
		require.NoError(t, <-done)
	})
}

// newPlatform builds a platform on a schema and Redis prefix of the test's
// own, closed at cleanup.
func newPlatform(t *testing.T, cfg *config.Config) *platform.Platform {
	t.Helper()
	return newPlatformOn(t, cfg, testkit.Redis(t))
}

// newPlatformOn builds a platform on a schema of the test's and rd.
func newPlatformOn(t *testing.T, cfg *config.Config, rd testkit.RedisEnv) *platform.Platform {
	t.Helper()
	return newPlatformWith(t, cfg, testkit.Schema(t), rd)
}

// newPlatformWith builds a platform on st and rd.
func newPlatformWith(t *testing.T, cfg *config.Config, st *store.Store, rd testkit.RedisEnv) *platform.Platform {
	t.Helper()
	p, err := platform.New(context.Background(), platform.Options{
		Config: cfg, Log: logging.New(io.Discard, slog.LevelError), Store: st, Redis: rd.Client,
		KeyPrefix: rd.Prefix, Queues: rd.Queues,
	})
	require.NoError(t, err)
	t.Cleanup(p.Close)
	return p
}
