package review_test

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/appruntime/appruntime/internal/apperr"
	"github.com/appruntime/appruntime/internal/outbox"
	"github.com/appruntime/appruntime/internal/review"
	"github.com/appruntime/appruntime/internal/store"
	"github.com/appruntime/appruntime/internal/testkit"
	"github.com/appruntime/appruntime/models"
)

func TestAdminReleaseResumesOnceUnderARace(t *testing.T) {
	t.Parallel()
	p := newParkedCommitted(t)
	var woken atomic.Int32
	settle := review.NewParked(p.st, func(context.Context) { woken.Add(1) })
	actor := "user:" + p.tn.Admin.ID

	const racers = 20
	var wg sync.WaitGroup
	var released, conflicts atomic.Int32
	for range racers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, err := settle.Release(context.Background(), p.tn.Workspace.ID, p.await.ID, actor, "approved by phone")
			switch {
			case err == nil:
				released.Add(1)
			case apperr.Is(err, apperr.Conflict):
				conflicts.Add(1)
			default:
				t.Errorf("release: %v", err)
			}
		}()
	}
	wg.Wait()
	require.Equal(t, int32(1), released.Load())
	require.Equal(t, int32(racers-1), conflicts.Load())
	require.Equal(t, int32(1), woken.Load(), "the relay is woken after the one release")

	var rows []models.Outbox
	require.NoError(t, p.st.DB.Where("kind = ?", outbox.KindResumeEvent).Find(&rows).Error)
	require.Len(t, rows, 1)
	var n int64
	require.NoError(t, p.st.DB.Model(&models.AuditEntry{}).Where("action = ? AND target_id = ?", review.AuditAwaitRelease, p.await.ID).Count(&n).Error)
	require.Equal(t, int64(1), n)
	require.NoError(t, p.st.DB.Model(&models.FeedEvent{}).Where("task_id = ? AND type = ?", p.task.ID, models.FeedAwaitResolved).Count(&n).Error)
	require.Equal(t, int64(1), n)

	// The resume event is the one an action writes, so the resume handler
	// runs the task again.
	require.NoError(t, p.resumer.HandleResume(context.Background(), rows[0].ID))
	require.Equal(t, models.TaskRunning, p.taskStatus(t))
	resumed := p.resumedRows(t)
	require.Len(t, resumed, 1)
	require.Equal(t, actor, resumed[0].Actor)
}

func TestAdminReleaseLosingARaceNamesTheWinningState(t *testing.T) {
	t.Parallel()
	p := newParkedCommitted(t)
	settle := review.NewParked(p.st, nil)
	ctx := context.Background()

	// An action's release is in flight: the await is resolved in a
	// transaction that has not committed yet.
	inFlight := p.st.DB.Begin()
	t.Cleanup(func() { inFlight.Rollback() })
	var pid int
	require.NoError(t, inFlight.Raw("SELECT pg_backend_pid()").Scan(&pid).Error)
	require.NoError(t, inFlight.Model(&models.TaskAwait{}).Where("id = ?", p.await.ID).
		Updates(map[string]any{"status": models.AwaitResolved, "reason": "action"}).Error)

	done := make(chan error, 1)
	go func() {
		_, err := settle.Release(ctx, p.tn.Workspace.ID, p.await.ID, "user:"+p.tn.Admin.ID, "approved by phone")
		done <- err
	}()
	// The admin's release has read the await as pending and now waits on
	// the in-flight transaction's row lock.
	require.Eventually(t, func() bool {
		var n int64
		err := p.st.DB.Raw("SELECT count(*) FROM pg_stat_activity WHERE ? = ANY(pg_blocking_pids(pid))", pid).Scan(&n).Error
		return err == nil && n == 1
	}, 10*time.Second, 10*time.Millisecond)
	require.NoError(t, inFlight.Commit().Error)

	err := <-done
	require.True(t, apperr.Is(err, apperr.Conflict), "%v", err)
	require.ErrorContains(t, err, "is already resolved, not pending")
}

func TestAdminAbortFailsTheTaskWithoutResuming(t *testing.T) {
	t.Parallel()
	p := newParked(t)
	var woken int
	settle := review.NewParked(p.st, func(context.Context) { woken++ })
	aw, err := settle.Abort(context.Background(), p.tn.Workspace.ID, p.await.ID, "user:"+p.tn.Admin.ID, "  duplicate invoice  ")
	require.NoError(t, err)
	require.Equal(t, models.AwaitAborted, aw.Status)
	require.Equal(t, review.ReasonAdminAbort, aw.Reason)
	require.NotNil(t, aw.ResolvedAt)
	require.Equal(t, models.TaskFailed, p.taskStatus(t))

	// The agent is told (an event of type task.aborted with its reason),
	// and the relay woken for it; the handler resumes nothing for it.
	var rows []models.Outbox
	require.NoError(t, p.st.DB.Find(&rows).Error)
	require.Len(t, rows, 1)
	var told review.ResumePayload
	require.NoError(t, rows[0].Payload.Decode(&told))
	require.Equal(t, review.AbortEventType, told.Type)
	require.Equal(t, review.ReasonAdminAbort, told.Reason)
	require.Equal(t, 1, woken)
	var ev models.FeedEvent
	require.NoError(t, p.st.DB.Where("task_id = ? AND type = ?", p.task.ID, models.FeedAwaitAborted).Take(&ev).Error)
	require.JSONEq(t, `{"await_id":"`+p.await.ID+`","task_id":"`+p.task.ID+`","step_id":"`+p.step.ID+`","reason":"admin_abort","note":"duplicate invoice"}`, string(ev.Payload))
	require.Equal(t, p.step.ID, *ev.StepID)

	_, err = settle.Release(context.Background(), p.tn.Workspace.ID, p.await.ID, "user:"+p.tn.Admin.ID, "approved by phone")
	require.True(t, apperr.Is(err, apperr.Conflict), "%v", err)
	require.ErrorContains(t, err, "is already aborted")
	_, err = settle.Abort(context.Background(), p.tn.Workspace.ID, p.await.ID, "user:"+p.tn.Admin.ID, "again")
	require.True(t, apperr.Is(err, apperr.Conflict), "%v", err)
}

func TestSettlingRefusals(t *testing.T) {
	t.Parallel()
	p := newParked(t)
	other := testkit.NewTenant(t, p.st.DB)
	settle := review.NewParked(p.st, nil)
	ctx := context.Background()
	for _, tc := range []struct {
		name      string
		workspace string
		awaitID   string
		note      string
		code      apperr.Code
		message   string
	}{
		{"another workspace's await", other.Workspace.ID, p.await.ID, "why", apperr.NotFound, "await " + p.await.ID + " not found"},
		{"no such await", p.tn.Workspace.ID, models.NewID(), "why", apperr.NotFound, "not found"},
		{"not an id", p.tn.Workspace.ID, "nope", "why", apperr.NotFound, "await nope not found"},
		{"a note too long", p.tn.Workspace.ID, p.await.ID, string(make([]byte, review.MaxAbortNoteLength+1)), apperr.Invalid, "reason is longer than"},
		{"no reason", p.tn.Workspace.ID, p.await.ID, " \t ", apperr.Invalid, "a reason is required"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := settle.Abort(ctx, tc.workspace, tc.awaitID, "user:x", tc.note)
			require.True(t, apperr.Is(err, tc.code), "%v", err)
			require.ErrorContains(t, err, tc.message)
			if tc.code == apperr.NotFound || tc.name == "no reason" {
				_, err = settle.Release(ctx, tc.workspace, tc.awaitID, "user:x", tc.note)
				require.True(t, apperr.Is(err, tc.code), "%v", err)
			}
		})
	}
	var aw models.TaskAwait
	require.NoError(t, p.st.DB.Where("id = ?", p.await.ID).Take(&aw).Error)
	require.Equal(t, models.AwaitPending, aw.Status, "nothing refused touched the await")
	require.Equal(t, models.TaskWaitingForInput, p.taskStatus(t))
}

// TestParkedStatsOnEachDialect reads the overview's "who is waiting" on both
// dialects: SQLite hands min(created_at) back as text, which once made the
// console's overview a 500 in dev mode.
func TestParkedStatsOnEachDialect(t *testing.T) {
	t.Parallel()
	testkit.EachDialect(t, func(t *testing.T, st *store.Store) {
		tn := testkit.NewTenant(t, st.DB)
		since := time.Now().UTC().Add(-time.Hour).Truncate(time.Second)
		for i := range 2 {
			task := models.Task{ID: models.NewID(), WorkspaceID: tn.Workspace.ID, AgentID: tn.Agent.ID, Status: models.TaskWaitingForInput}
			require.NoError(t, st.DB.Create(&task).Error)
			aw := models.TaskAwait{ID: models.NewID(), TaskID: task.ID, SourceType: models.AwaitSourceAppTool,
				CorrelationKey: models.NewID(), Status: models.AwaitPending, CreatedAt: since.Add(time.Duration(i) * time.Minute)}
			require.NoError(t, st.DB.Create(&aw).Error)
		}
		stats, err := review.ParkedStats(context.Background(), st.DB, tn.Workspace.ID)
		require.NoError(t, err)
		require.Len(t, stats, 1)
		require.Equal(t, tn.Agent.ID, stats[0].AgentID)
		require.Equal(t, 2, stats[0].Tasks)
		require.True(t, since.Equal(stats[0].OldestSince), "oldest %v, want %v", stats[0].OldestSince, since)
	})
}
