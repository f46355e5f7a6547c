package intent_test

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/appruntime/appruntime/internal/intent"
	"github.com/appruntime/appruntime/internal/store"
	"github.com/appruntime/appruntime/internal/testkit"
	"github.com/appruntime/appruntime/models"
)

var discard = slog.New(slog.NewTextHandler(io.Discard, nil))

// step is a task with one app-tool step, parked on an await of status
// awaitStatus ("" for a step that never parked).
type step struct {
	TaskID, StepID string
}

func newStep(t *testing.T, st *store.Store, awaitStatus string) step {
	t.Helper()
	tn := testkit.NewTenant(t, st.DB)
	task := models.Task{ID: models.NewID(), WorkspaceID: tn.Workspace.ID, AgentID: tn.Agent.ID, Status: models.TaskWaitingForInput}
	require.NoError(t, st.DB.Create(&task).Error)
	s := models.Step{ID: models.NewID(), TaskID: task.ID, Kind: models.StepAppTool, Status: models.StepCompleted}
	require.NoError(t, st.DB.Create(&s).Error)
	if awaitStatus != "" {
		require.NoError(t, st.DB.Create(&models.TaskAwait{ID: models.NewID(), TaskID: task.ID, SourceType: models.AwaitSourceAppTool,
			CorrelationKey: s.ID, Status: awaitStatus}).Error)
	}
	return step{TaskID: task.ID, StepID: s.ID}
}

func (s step) intent(owner, name string) models.WriteIntent {
	return models.WriteIntent{ID: models.NewID(), Owner: owner, TaskID: s.TaskID, StepID: s.StepID, Name: name,
		Actor: "user:x", Payload: models.MustJSON(map[string]any{"verb": "write", "op": name})}
}

// stores runs a test on both dialects.
func stores(t *testing.T, fn func(t *testing.T, st *store.Store)) {
	t.Helper()
	for name, open := range map[string]func(testing.TB) *store.Store{"postgres": testkit.Schema, "sqlite": testkit.SQLite} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			fn(t, open(t))
		})
	}
}

func feedOf(t *testing.T, st *store.Store, taskID string) []models.FeedEvent {
	t.Helper()
	var rows []models.FeedEvent
	require.NoError(t, st.DB.Where("task_id = ?", taskID).Order("id").Find(&rows).Error)
	return rows
}

func intentCount(t *testing.T, st *store.Store) int64 {
	t.Helper()
	var n int64
	require.NoError(t, st.DB.Model(&models.WriteIntent{}).Count(&n).Error)
	return n
}

func TestApplyOpensOnlyWhereTheAwaitIsPendingOrAbsent(t *testing.T) {
	t.Parallel()
	stores(t, func(t *testing.T, st *store.Store) {
		ctx := context.Background()
		cases := []struct {
			await string
			opens bool
		}{
			{"", true},
			{models.AwaitPending, true},
			{models.AwaitResolved, false},
			{models.AwaitAborted, false},
		}
		var b intent.Batch
		for _, c := range cases {
			b.Open = append(b.Open, newStep(t, st, c.await).intent(models.NewID(), "w"))
		}
		applied, err := intent.Apply(ctx, st.DB, b)
		require.NoError(t, err)
		for i, c := range cases {
			require.Equal(t, !c.opens, applied.Refused[b.Open[i].ID], "await %q", c.await)
		}
		require.Equal(t, int64(2), intentCount(t, st), "a refused intent is not recorded")
	})
}

func TestApplyCompletesIntoOneFeedRowAndDropsWithoutAny(t *testing.T) {
	t.Parallel()
	stores(t, func(t *testing.T, st *store.Store) {
		ctx := context.Background()
		s := newStep(t, st, models.AwaitPending)
		done, dropped := s.intent(models.NewID(), "set_status"), s.intent(models.NewID(), "set_status")
		applied, err := intent.Apply(ctx, st.DB, intent.Batch{Open: []models.WriteIntent{done, dropped}})
		require.NoError(t, err)
		require.Empty(t, applied.Refused)

		result := models.MustJSON(map[string]any{"verb": "write", "rows_affected": 1})
		completion := intent.Completion{ID: done.ID, TaskID: s.TaskID, Type: models.FeedAgentAction, Payload: result}
		applied, err = intent.Apply(ctx, st.DB, intent.Batch{Drop: []string{dropped.ID}, Complete: []intent.Completion{completion}})
		require.NoError(t, err)
		require.Empty(t, applied.Missing)
		require.Zero(t, intentCount(t, st))
		rows := feedOf(t, st, s.TaskID)
		require.Len(t, rows, 1, "the completed intent became one feed row, the dropped one none")
		require.Equal(t, models.FeedAgentAction, rows[0].Type)
		require.Equal(t, "set_status", rows[0].Name)
		require.Equal(t, s.StepID, *rows[0].StepID)
		require.Equal(t, "user:x", rows[0].Actor)
		require.JSONEq(t, string(result), string(rows[0].Payload))

		// Completing it again (a racing sweep got there first) records nothing.
		applied, err = intent.Apply(ctx, st.DB, intent.Batch{Complete: []intent.Completion{completion}})
		require.NoError(t, err)
		require.True(t, applied.Missing[done.ID])
		require.Len(t, feedOf(t, st, s.TaskID), 1)
	})
}

// A completion without a payload records the intent's own record with the
// write's row count added (the database builds it from the intent).
func TestACompletionByCountRecordsTheIntentsRecordWithTheCount(t *testing.T) {
	t.Parallel()
	stores(t, func(t *testing.T, st *store.Store) {
		ctx := context.Background()
		s := newStep(t, st, models.AwaitPending)
		in := s.intent(models.NewID(), "set_n")
		in.Payload = models.JSON(`{"op":"set_n","row":{"id":12345678901234567890,"n":"a \"b\" \u00e9"},"verb":"write"}`)
		_, err := intent.Apply(ctx, st.DB, intent.Batch{Open: []models.WriteIntent{in}})
		require.NoError(t, err)
		applied, err := intent.Apply(ctx, st.DB, intent.Batch{Complete: []intent.Completion{
			{ID: in.ID, TaskID: s.TaskID, Type: models.FeedAgentAction, RowsAffected: 2}}})
		require.NoError(t, err)
		require.Empty(t, applied.Missing)
		rows := feedOf(t, st, s.TaskID)
		require.Len(t, rows, 1)
		require.JSONEq(t, `{"op":"set_n","row":{"id":12345678901234567890,"n":"a \"b\" \u00e9"},"verb":"write","rows_affected":2}`,
			string(rows[0].Payload))
	})
}

func TestApplyIsAllOrNothing(t *testing.T) {
	t.Parallel()
	stores(t, func(t *testing.T, st *store.Store) {
		ctx := context.Background()
		s := newStep(t, st, models.AwaitPending)
		good := s.intent(models.NewID(), "w")
		dropped := s.intent(models.NewID(), "w")
		orphan := newStep(t, st, "").intent(models.NewID(), "w")
		_, err := intent.Apply(ctx, st.DB, intent.Batch{Open: []models.WriteIntent{good, dropped, orphan}})
		require.NoError(t, err)
		require.NoError(t, st.DB.Delete(&models.Task{}, "id = ?", orphan.TaskID).Error) // its task is deleted meanwhile

		_, err = intent.Apply(ctx, st.DB, intent.Batch{
			Drop: []string{dropped.ID},
			Complete: []intent.Completion{
				{ID: good.ID, TaskID: good.TaskID, Type: models.FeedAgentAction, Payload: good.Payload},
				{ID: orphan.ID, TaskID: orphan.TaskID, Type: models.FeedAgentAction, Payload: orphan.Payload},
			},
		})
		require.Error(t, err, "the orphan's feed row has no task")
		require.Empty(t, feedOf(t, st, s.TaskID), "the good intent was not completed either")
		require.Equal(t, int64(3), intentCount(t, st), "nor the dropped one dropped")

		// The sweep lets the orphan go and records the others.
		n, err := intent.Sweep(ctx, st, time.Now().Add(intent.StaleAfter+time.Minute))
		require.NoError(t, err)
		require.Equal(t, 2, n)
		require.Zero(t, intentCount(t, st))
		require.Len(t, feedOf(t, st, s.TaskID), 2)
	})
}

func TestSweepRecordsTheIntentsOfAGoneOwnerOnceAndLeavesALiveOnesAlone(t *testing.T) {
	t.Parallel()
	st := testkit.Schema(t)
	ctx := context.Background()
	s := newStep(t, st, models.AwaitPending)
	live, err := intent.Claim(ctx, st, discard)
	require.NoError(t, err)
	defer live.Close()
	gone, err := intent.Claim(ctx, st, discard)
	require.NoError(t, err)
	liveIntent, goneIntent := s.intent(live.ID(), "live"), s.intent(gone.ID(), "gone")
	_, err = intent.Apply(ctx, st.DB, intent.Batch{Open: []models.WriteIntent{liveIntent, goneIntent}})
	require.NoError(t, err)

	n, err := intent.Sweep(ctx, st, time.Now())
	require.NoError(t, err)
	require.Zero(t, n, "both owners are alive")

	gone.Close() // as a killed process's connection closes
	const sweeps = 4
	var wg sync.WaitGroup
	counts := make(chan int, sweeps)
	for range sweeps {
		wg.Add(1)
		go func() {
			defer wg.Done()
			n, err := intent.Sweep(ctx, st, time.Now())
			require.NoError(t, err)
			counts <- n
		}()
	}
	wg.Wait()
	close(counts)
	total := 0
	for n := range counts {
		total += n
	}
	require.Equal(t, 1, total, "concurrent sweeps record the gone owner's intent once")

	rows := feedOf(t, st, s.TaskID)
	require.Len(t, rows, 1)
	require.Equal(t, models.FeedAgentActionUnknown, rows[0].Type)
	require.Equal(t, "gone", rows[0].Name)
	var payload map[string]any
	require.NoError(t, json.Unmarshal(rows[0].Payload, &payload))
	require.Equal(t, "unknown", payload["outcome"])
	require.Equal(t, goneIntent.ID, payload["intent_id"])
	require.Equal(t, intent.ReasonOwnerGone, payload["reason"])
	require.Equal(t, map[string]any{"verb": "write", "op": "gone"}, payload["intended"])

	var left []models.WriteIntent
	require.NoError(t, st.DB.Find(&left).Error)
	require.Len(t, left, 1)
	require.Equal(t, liveIntent.ID, left[0].ID, "the live owner's intent is untouched")
}

func TestSweepRecordsAStaleIntentWhateverItsOwner(t *testing.T) {
	t.Parallel()
	stores(t, func(t *testing.T, st *store.Store) {
		ctx := context.Background()
		s := newStep(t, st, "")
		owner, err := intent.Claim(ctx, st, discard)
		require.NoError(t, err)
		defer owner.Close()
		in := s.intent(owner.ID(), "w")
		_, err = intent.Apply(ctx, st.DB, intent.Batch{Open: []models.WriteIntent{in}})
		require.NoError(t, err)

		n, err := intent.Sweep(ctx, st, time.Now())
		require.NoError(t, err)
		require.Zero(t, n, "a fresh intent of a live owner waits")
		n, err = intent.Sweep(ctx, st, time.Now().Add(intent.StaleAfter+time.Minute))
		require.NoError(t, err)
		require.Equal(t, 1, n)
		rows := feedOf(t, st, s.TaskID)
		require.Len(t, rows, 1)
		require.Equal(t, models.FeedAgentActionUnknown, rows[0].Type)
		require.Zero(t, intentCount(t, st))
	})
}
