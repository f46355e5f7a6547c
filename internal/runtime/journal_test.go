package runtime_test

import (
	"context"
	"fmt"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/appruntime/appruntime/internal/apperr"
	"github.com/appruntime/appruntime/internal/intent"
	"github.com/appruntime/appruntime/internal/runtime"
	"github.com/appruntime/appruntime/internal/store"
	"github.com/appruntime/appruntime/internal/testkit"
	"github.com/appruntime/appruntime/models"
)

func TestJournalCommitsEveryWriteAndIsolatesABadOne(t *testing.T) {
	t.Parallel()
	st := testkit.Schema(t)
	task, step := newTaskStep(t, st)
	j := runtime.NewJournal(st, nil)
	defer j.Close()
	ctx := context.Background()

	// Each write opens its intent, then completes it, as /write does; they
	// share statements with each other's.
	write := func(taskID string, i int) error {
		in := models.WriteIntent{ID: models.NewID(), TaskID: taskID, StepID: step.ID, Name: "w", Actor: "user:x",
			Payload: models.MustJSON(map[string]int{"i": i})}
		opened, err := j.Open(ctx, in)
		if err != nil || !opened {
			return fmt.Errorf("open: %v, %w", opened, err)
		}
		done, err := j.Complete(ctx, intent.Completion{ID: in.ID, TaskID: taskID, Type: models.FeedAgentAction,
			Payload: models.MustJSON(map[string]int{"i": i, "rows_affected": 1})})
		if err != nil || !done {
			return fmt.Errorf("complete: %v, %w", done, err)
		}
		return nil
	}
	const n = 200
	var wg sync.WaitGroup
	errs := make(chan error, n+1)
	for i := range n {
		wg.Add(1)
		go func() { defer wg.Done(); errs <- write(task.ID, i) }()
	}
	wg.Add(1)
	go func() { defer wg.Done(); errs <- write(models.NewID(), -1) }() // a task that does not exist fails alone
	wg.Wait()
	close(errs)
	failed := 0
	for err := range errs {
		if err != nil {
			failed++
		}
	}
	require.Equal(t, 1, failed, "only the orphan write fails")
	var count int64
	require.NoError(t, st.DB.Model(&models.FeedEvent{}).Where("task_id = ? AND type = ?", task.ID, models.FeedAgentAction).Count(&count).Error)
	require.Equal(t, int64(n), count, "every acknowledged write has its feed row")
	require.NoError(t, st.DB.Model(&models.WriteIntent{}).Where("task_id = ?", task.ID).Count(&count).Error)
	require.Zero(t, count, "no intent is left behind (but the orphan's, for the sweep to drop)")
}

func TestJournalAfterCloseIsRetryableNotAPanic(t *testing.T) {
	t.Parallel()
	st := testkit.SQLite(t)
	j := runtime.NewJournal(st, nil)
	j.Close()
	_, err := j.Open(context.Background(), models.WriteIntent{ID: models.NewID(), TaskID: models.NewID()})
	require.Equal(t, apperr.Unavailable, apperr.CodeOf(err))
}

func TestACompletionQueuedForLaterIsCommittedByTheNextFlush(t *testing.T) {
	t.Parallel()
	for name, open := range map[string]func(testing.TB) *store.Store{"postgres": testkit.Schema, "sqlite": testkit.SQLite} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			st := open(t)
			task, step := newTaskStep(t, st)
			j := runtime.NewJournal(st, nil)
			defer j.Close()
			ctx := context.Background()

			in := models.WriteIntent{ID: models.NewID(), TaskID: task.ID, StepID: step.ID, Name: "w", Actor: "user:x",
				Payload: models.MustJSON(map[string]any{"verb": "write"})}
			opened, err := j.Open(ctx, in)
			require.NoError(t, err)
			require.True(t, opened)
			require.NoError(t, j.CompleteLater(ctx, intent.Completion{ID: in.ID, TaskID: task.ID, Type: models.FeedAgentAction, Payload: in.Payload}))
			require.NoError(t, j.Flush(ctx))
			var n int64
			require.NoError(t, st.DB.Model(&models.FeedEvent{}).Where("task_id = ? AND type = ?", task.ID, models.FeedAgentAction).Count(&n).Error)
			require.EqualValues(t, 1, n, "the flush returned after the queued completion committed")
			require.NoError(t, st.DB.Model(&models.WriteIntent{}).Count(&n).Error)
			require.Zero(t, n)
		})
	}
}

// newTaskStep makes a running task with one app-tool step in st.
func newTaskStep(t *testing.T, st *store.Store) (models.Task, models.Step) {
	t.Helper()
	tn := testkit.NewTenant(t, st.DB)
	task := models.Task{ID: models.NewID(), WorkspaceID: tn.Workspace.ID, AgentID: tn.Agent.ID, Status: models.TaskRunning}
	require.NoError(t, st.DB.Create(&task).Error)
	step := models.Step{ID: models.NewID(), TaskID: task.ID, Kind: models.StepAppTool, Status: models.StepCompleted}
	require.NoError(t, st.DB.Create(&step).Error)
	return task, step
}
