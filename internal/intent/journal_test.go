package intent_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/appruntime/appruntime/internal/apperr"
	"github.com/appruntime/appruntime/internal/intent"
	"github.com/appruntime/appruntime/internal/outbox"
	"github.com/appruntime/appruntime/internal/store"
	"github.com/appruntime/appruntime/internal/testkit"
	"github.com/appruntime/appruntime/internal/webhook"
	"github.com/appruntime/appruntime/models"
)

func TestJournalCommitsEveryWriteAndIsolatesABadOne(t *testing.T) {
	t.Parallel()
	st := testkit.Schema(t)
	task, step := newTaskStep(t, st)
	j := intent.NewJournal(st, nil)
	defer j.Close()
	ctx := context.Background()

	// Each write opens its intent, then completes it, as /write does; they
	// share statements with each other's.
	write := func(taskID string, i int) error {
		in := models.WriteIntent{ID: models.NewID(), TaskID: taskID, StepID: step.ID, Name: "w", Actor: "user:x",
			Payload: models.MustJSON(map[string]int{"i": i})}
		in, opened, err := j.Open(ctx, in)
		if err != nil || !opened {
			return fmt.Errorf("open: %v, %w", opened, err)
		}
		done, err := j.Complete(ctx, intent.Completion{Intent: in, Type: models.FeedAgentAction,
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
	go func() { defer wg.Done(); errs <- write(models.NewID(), -1) }() // a task that does not exist gets no row, alone
	wg.Wait()
	close(errs)
	failed := 0
	for err := range errs {
		if err != nil {
			failed++
		}
	}
	require.Equal(t, 1, failed, "only the orphan write is not recorded")
	var count int64
	require.NoError(t, st.DB.Model(&models.FeedEvent{}).Where("task_id = ? AND type = ?", task.ID, models.FeedAgentAction).Count(&count).Error)
	require.Equal(t, int64(n), count, "every acknowledged write has its feed row")
	require.Eventually(t, func() bool { return batchCount(t, st) == 0 }, 5*time.Second, 10*time.Millisecond,
		"no intent batch is left behind")
}

func batchCount(t *testing.T, st *store.Store) int64 {
	t.Helper()
	var n int64
	require.NoError(t, st.DB.Model(&models.WriteIntentBatch{}).Count(&n).Error)
	return n
}

// A batch's row goes once each of its intents is recorded, dropped (its
// write did not commit) or recorded by its caller (an action), and not
// before.
func TestABatchGoesOnceEachOfItsIntentsIsSettled(t *testing.T) {
	t.Parallel()
	testkit.EachDialect(t, func(t *testing.T, st *store.Store) {
		task, step, j := journalOn(t, st)
		ctx := context.Background()
		const n = 30
		intents := make([]models.WriteIntent, n)
		var wg sync.WaitGroup
		for i := range n {
			wg.Add(1)
			go func() {
				defer wg.Done()
				in, opened, err := j.Open(ctx, models.WriteIntent{ID: models.NewID(), TaskID: task.ID, StepID: step.ID, Name: "w",
					Actor: "user:x", Payload: models.MustJSON(map[string]any{"i": i})})
				require.NoError(t, err)
				require.True(t, opened)
				intents[i] = in
			}()
		}
		wg.Wait()
		require.Positive(t, batchCount(t, st))
		for i, in := range intents[:n-1] {
			switch i % 3 {
			case 0:
				require.NoError(t, j.CompleteLater(ctx, intent.Completion{Intent: in, Type: models.FeedAgentAction, RowsAffected: 1}))
			case 1:
				require.NoError(t, j.Drop(ctx, in))
			default:
				j.Recorded(ctx, in)
			}
		}
		require.NoError(t, j.Flush(ctx))
		time.Sleep(50 * time.Millisecond)
		require.NoError(t, j.Flush(ctx))
		require.EqualValues(t, 1, batchCount(t, st), "the last intent's batch stays while it is in flight")
		require.NoError(t, j.Drop(ctx, intents[n-1]))
		require.Eventually(t, func() bool { return batchCount(t, st) == 0 }, 5*time.Second, 10*time.Millisecond)
		var rows int64
		require.NoError(t, st.DB.Model(&models.FeedEvent{}).Where("task_id = ?", task.ID).Count(&rows).Error)
		require.EqualValues(t, (n-1+2)/3, rows, "a row for each completion only")
	})
}

func TestJournalAfterCloseIsRetryableNotAPanic(t *testing.T) {
	t.Parallel()
	st := testkit.SQLite(t)
	j := intent.NewJournal(st, nil)
	j.Close()
	_, _, err := j.Open(context.Background(), models.WriteIntent{ID: models.NewID(), TaskID: models.NewID()})
	require.Equal(t, apperr.Unavailable, apperr.CodeOf(err))
}

func TestACompletionQueuedForLaterIsCommittedByTheNextFlush(t *testing.T) {
	t.Parallel()
	testkit.EachDialect(t, func(t *testing.T, st *store.Store) {
		task, step, j := journalOn(t, st)
		ctx := context.Background()

		in := models.WriteIntent{ID: models.NewID(), TaskID: task.ID, StepID: step.ID, Name: "w", Actor: "user:x",
			Payload: models.MustJSON(map[string]any{"verb": "write"})}
		in, opened, err := j.Open(ctx, in)
		require.NoError(t, err)
		require.True(t, opened)
		require.NoError(t, j.CompleteLater(ctx, intent.Completion{Intent: in, Type: models.FeedAgentAction, Payload: in.Payload}))
		require.NoError(t, j.Flush(ctx))
		var n int64
		require.NoError(t, st.DB.Model(&models.FeedEvent{}).Where("task_id = ? AND type = ?", task.ID, models.FeedAgentAction).Count(&n).Error)
		require.EqualValues(t, 1, n, "the flush returned after the queued completion committed")
		require.Eventually(t, func() bool { return batchCount(t, st) == 0 }, 5*time.Second, 10*time.Millisecond)
	})
}

// journalOn returns a journal on st, closed when the test ends, and a task
// with an app-tool step to write on.
func journalOn(t *testing.T, st *store.Store) (models.Task, models.Step, *intent.Journal) {
	t.Helper()
	task, step := newTaskStep(t, st)
	j := intent.NewJournal(st, nil)
	t.Cleanup(j.Close)
	return task, step, j
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

// A write whose answer was lost is recorded as outcome unknown, and its
// webhook event (outcome.unknown) commits with the feed row on both
// dialects, also through the journal's one-statement settle on Postgres
// (docs/agent-platforms.md#webhook-event-catalogue); a plain completion in
// the same journal pushes nothing.
func TestAnUnknownOutcomeIsPushedToTheAgentWithItsRow(t *testing.T) {
	t.Parallel()
	testkit.EachDialect(t, func(t *testing.T, st *store.Store) {
		task, step := newTaskStep(t, st)
		require.NoError(t, st.DB.Model(&models.Agent{}).Where("id = ?", task.AgentID).
			Update("resume_webhook_url", "https://agent.example/hook").Error)
		j := intent.NewJournal(st, nil)
		defer j.Close()
		ctx := context.Background()
		settle := func(typ string, payload func(models.WriteIntent) models.JSON) models.WriteIntent {
			t.Helper()
			in, opened, err := j.Open(ctx, models.WriteIntent{ID: models.NewID(), TaskID: task.ID, StepID: step.ID,
				Name: "set_status", Actor: "user:x", Payload: models.MustJSON(map[string]string{"op": "set_status"})})
			require.NoError(t, err)
			require.True(t, opened)
			done, err := j.Complete(ctx, intent.Completion{Intent: in, Type: typ, Payload: payload(in)})
			require.NoError(t, err)
			require.True(t, done)
			return in
		}
		settle(models.FeedAgentAction, func(models.WriteIntent) models.JSON { return models.MustJSON(map[string]int{"rows_affected": 1}) })
		lost := settle(models.FeedAgentActionUnknown, func(in models.WriteIntent) models.JSON {
			return intent.UnknownPayload(in, intent.ReasonAnswerLost)
		})

		var rows []models.Outbox
		require.NoError(t, st.DB.Where("kind = ?", outbox.KindResumeEvent).Find(&rows).Error)
		var events []webhook.Event
		for _, r := range rows {
			var ev webhook.Event
			require.NoError(t, r.Payload.Decode(&ev))
			if ev.TaskID == task.ID {
				events = append(events, ev)
			}
		}
		require.Len(t, events, 1, "only the unknown outcome is pushed")
		require.Equal(t, webhook.OutcomeUnknown, events[0].Type)
		require.Equal(t, step.ID, events[0].StepID)
		require.Equal(t, "set_status", events[0].Name)

		var fed []models.FeedEvent
		require.NoError(t, st.DB.Where("task_id = ? AND type = ?", task.ID, models.FeedAgentActionUnknown).Find(&fed).Error)
		require.Len(t, fed, 1)
		require.Equal(t, lost.ID, *fed[0].IntentID)
		require.Eventually(t, func() bool { return batchCount(t, st) == 0 }, 5*time.Second, 10*time.Millisecond,
			"the batch goes once both are settled")
	})
}
