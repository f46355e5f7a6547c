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
	"gorm.io/gorm/clause"

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

// open records intents as one batch, as the journal does, and returns them
// with their BatchID set.
func open(t *testing.T, st *store.Store, intents ...models.WriteIntent) (intent.Applied, []models.WriteIntent) {
	t.Helper()
	id := models.NewID()
	for i := range intents {
		intents[i].BatchID = id
	}
	applied, err := intent.Apply(context.Background(), st.DB, intent.Batch{ID: id, Open: intents})
	require.NoError(t, err)
	return applied, intents
}

func feedOf(t *testing.T, st *store.Store, taskID string) []models.FeedEvent {
	t.Helper()
	var rows []models.FeedEvent
	require.NoError(t, st.DB.Where("task_id = ?", taskID).Order("id").Find(&rows).Error)
	return rows
}

func batches(t *testing.T, st *store.Store) []models.WriteIntentBatch {
	t.Helper()
	var rows []models.WriteIntentBatch
	require.NoError(t, st.DB.Order("created_at").Find(&rows).Error)
	return rows
}

// recordedIDs are the intent ids of a batch's records.
func recordedIDs(t *testing.T, b models.WriteIntentBatch) []string {
	t.Helper()
	var recs []struct{ ID string }
	require.NoError(t, json.Unmarshal([]byte(b.Intents), &recs))
	ids := make([]string, len(recs))
	for i, r := range recs {
		ids[i] = r.ID
	}
	return ids
}

func TestApplyOpensOnlyWhereTheAwaitIsPendingOrAbsent(t *testing.T) {
	t.Parallel()
	testkit.EachDialect(t, func(t *testing.T, st *store.Store) {
		cases := []struct {
			await string
			opens bool
		}{
			{"", true},
			{models.AwaitPending, true},
			{models.AwaitResolved, false},
			{models.AwaitAborted, false},
		}
		owner := models.NewID()
		var intents []models.WriteIntent
		for _, c := range cases {
			s := newStep(t, st, c.await)
			intents = append(intents, s.intent(owner, "w"), s.intent(owner, "w")) // two a step
		}
		applied, opened := open(t, st, intents...)
		var want []string
		for i, in := range opened {
			c := cases[i/2]
			require.Equal(t, !c.opens, applied.Refused[in.ID], "await %q", c.await)
			if c.opens {
				want = append(want, in.ID)
			}
		}
		rows := batches(t, st)
		require.Len(t, rows, 1, "one row for the batch")
		require.Equal(t, opened[0].BatchID, rows[0].ID)
		require.Equal(t, owner, rows[0].Owner)
		require.Equal(t, want, recordedIDs(t, rows[0]), "a refused intent is not recorded")

		_, none := open(t, st, newStep(t, st, models.AwaitResolved).intent(owner, "w"))
		require.Len(t, batches(t, st), 1, "a batch refused whole records no row")
		require.NotEmpty(t, none)
	})
}

func TestApplyCompletesIntoOneFeedRowThatNamesTheIntent(t *testing.T) {
	t.Parallel()
	testkit.EachDialect(t, func(t *testing.T, st *store.Store) {
		ctx := context.Background()
		s := newStep(t, st, models.AwaitPending)
		_, opened := open(t, st, s.intent(models.NewID(), "set_status"), s.intent(models.NewID(), "set_status"))
		done := opened[0] // the other is dropped: its write did not commit

		result := models.MustJSON(map[string]any{"verb": "write", "rows_affected": 1})
		completion := intent.Completion{Intent: done, Type: models.FeedAgentAction, Payload: result}
		applied, err := intent.Apply(ctx, st.DB, intent.Batch{Complete: []intent.Completion{completion}})
		require.NoError(t, err)
		require.Empty(t, applied.Missing)
		rows := feedOf(t, st, s.TaskID)
		require.Len(t, rows, 1, "the completed intent became one feed row, the dropped one none")
		require.Equal(t, models.FeedAgentAction, rows[0].Type)
		require.Equal(t, "set_status", rows[0].Name)
		require.Equal(t, s.StepID, *rows[0].StepID)
		require.Equal(t, "user:x", rows[0].Actor)
		require.Equal(t, done.ID, *rows[0].IntentID)
		require.JSONEq(t, string(result), string(rows[0].Payload))

		// Both settled, the batch's row goes.
		_, err = intent.Apply(ctx, st.DB, intent.Batch{Done: []string{done.BatchID}})
		require.NoError(t, err)
		require.Empty(t, batches(t, st))

		// Completing it again (a racing sweep took the batch first) records nothing.
		applied, err = intent.Apply(ctx, st.DB, intent.Batch{Complete: []intent.Completion{completion}})
		require.NoError(t, err)
		require.True(t, applied.Missing[done.ID])
		require.Len(t, feedOf(t, st, s.TaskID), 1)
	})
}

// A completion without a payload records the intent's own record with the
// write's row count added.
func TestACompletionByCountRecordsTheIntentsRecordWithTheCount(t *testing.T) {
	t.Parallel()
	testkit.EachDialect(t, func(t *testing.T, st *store.Store) {
		ctx := context.Background()
		s := newStep(t, st, models.AwaitPending)
		in := s.intent(models.NewID(), "set_n")
		in.Payload = models.JSON(`{"op":"set_n","row":{"id":12345678901234567890,"n":"a \"b\" \u00e9"},"verb":"write"}`)
		_, opened := open(t, st, in)
		applied, err := intent.Apply(ctx, st.DB, intent.Batch{Complete: []intent.Completion{
			{Intent: opened[0], Type: models.FeedAgentAction, RowsAffected: 2}}})
		require.NoError(t, err)
		require.Empty(t, applied.Missing)
		rows := feedOf(t, st, s.TaskID)
		require.Len(t, rows, 1)
		require.JSONEq(t, `{"op":"set_n","row":{"id":12345678901234567890,"n":"a \"b\" \u00e9"},"verb":"write","rows_affected":2}`,
			string(rows[0].Payload))
	})
}

// A task deleted while its write was in flight gets no feed row (the
// completion is missing, not an error), and the batch's other intents are
// recorded; a task's delete takes its feed rows with it.
func TestATaskDeletedMeanwhileGetsNoFeedRow(t *testing.T) {
	t.Parallel()
	testkit.EachDialect(t, func(t *testing.T, st *store.Store) {
		ctx := context.Background()
		s := newStep(t, st, models.AwaitPending)
		other := newStep(t, st, "")
		_, opened := open(t, st, s.intent(models.NewID(), "w"), other.intent(models.NewID(), "w"))
		require.NoError(t, st.DB.Delete(&models.Task{}, "id = ?", other.TaskID).Error)

		var complete []intent.Completion
		for _, in := range opened {
			complete = append(complete, intent.Completion{Intent: in, Type: models.FeedAgentAction, RowsAffected: 1})
		}
		applied, err := intent.Apply(ctx, st.DB, intent.Batch{Complete: complete})
		require.NoError(t, err)
		require.Equal(t, map[string]bool{opened[1].ID: true}, applied.Missing)
		require.Len(t, feedOf(t, st, s.TaskID), 1)
		require.Empty(t, feedOf(t, st, other.TaskID))

		require.NoError(t, st.DB.Delete(&models.Task{}, "id = ?", s.TaskID).Error)
		require.Empty(t, feedOf(t, st, s.TaskID), "a deleted task's feed rows go with it")
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
	_, liveBatch := open(t, st, s.intent(live.ID(), "live"))
	_, goneBatch := open(t, st, s.intent(gone.ID(), "recorded"), s.intent(gone.ID(), "gone"))
	// The first of the gone owner's writes was recorded before it stopped.
	_, err = intent.Apply(ctx, st.DB, intent.Batch{Complete: []intent.Completion{{Intent: goneBatch[0], Type: models.FeedAgentAction, RowsAffected: 1}}})
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
	require.Equal(t, 1, total, "concurrent sweeps record the gone owner's unrecorded intent once")

	rows := feedOf(t, st, s.TaskID)
	require.Len(t, rows, 2)
	require.Equal(t, models.FeedAgentAction, rows[0].Type, "the recorded write keeps its row, and no other")
	require.Equal(t, models.FeedAgentActionUnknown, rows[1].Type)
	require.Equal(t, "gone", rows[1].Name)
	require.Equal(t, goneBatch[1].ID, *rows[1].IntentID)
	var payload map[string]any
	require.NoError(t, json.Unmarshal(rows[1].Payload, &payload))
	require.Equal(t, "unknown", payload["outcome"])
	require.Equal(t, goneBatch[1].ID, payload["intent_id"])
	require.Equal(t, intent.ReasonOwnerGone, payload["reason"])
	require.Equal(t, map[string]any{"verb": "write", "op": "gone"}, payload["intended"])

	left := batches(t, st)
	require.Len(t, left, 1)
	require.Equal(t, liveBatch[0].BatchID, left[0].ID, "the live owner's batch is untouched")
}

func TestSweepRecordsAStaleIntentWhateverItsOwner(t *testing.T) {
	t.Parallel()
	testkit.EachDialect(t, func(t *testing.T, st *store.Store) {
		ctx := context.Background()
		s := newStep(t, st, "")
		owner, err := intent.Claim(ctx, st, discard)
		require.NoError(t, err)
		defer owner.Close()
		open(t, st, s.intent(owner.ID(), "w"))

		n, err := intent.Sweep(ctx, st, time.Now())
		require.NoError(t, err)
		require.Zero(t, n, "a fresh intent of a live owner waits")
		n, err = intent.Sweep(ctx, st, time.Now().Add(intent.StaleAfter+time.Minute))
		require.NoError(t, err)
		require.Equal(t, 1, n)
		rows := feedOf(t, st, s.TaskID)
		require.Len(t, rows, 1)
		require.Equal(t, models.FeedAgentActionUnknown, rows[0].Type)
		require.Empty(t, batches(t, st))
	})
}

// A sweep skips a batch a completion holds (the completion then records its
// intent), and a completion after the sweep finds the batch gone.
func TestASweepAndACompletionNeverBothRecord(t *testing.T) {
	t.Parallel()
	st := testkit.Schema(t)
	ctx := context.Background()
	s := newStep(t, st, "")
	gone, err := intent.Claim(ctx, st, discard)
	require.NoError(t, err)
	_, opened := open(t, st, s.intent(gone.ID(), "w"))
	gone.Close()

	holder := st.DB.Begin()
	t.Cleanup(func() { holder.Rollback() })
	var held []models.WriteIntentBatch
	require.NoError(t, holder.Clauses(clause.Locking{Strength: "KEY SHARE"}).Find(&held, "id = ?", opened[0].BatchID).Error)
	require.Len(t, held, 1)
	n, err := intent.Sweep(ctx, st, time.Now())
	require.NoError(t, err)
	require.Zero(t, n, "the held batch is skipped")
	require.NoError(t, holder.Rollback().Error)

	n, err = intent.Sweep(ctx, st, time.Now())
	require.NoError(t, err)
	require.Equal(t, 1, n)
	applied, err := intent.Apply(ctx, st.DB, intent.Batch{Complete: []intent.Completion{{Intent: opened[0], Type: models.FeedAgentAction, RowsAffected: 1}}})
	require.NoError(t, err)
	require.True(t, applied.Missing[opened[0].ID], "the late completion records nothing")
	require.Len(t, feedOf(t, st, s.TaskID), 1)
}

// Intents of processes from before intent batches (a row each) are still
// swept.
func TestSweepRecordsLegacyIntents(t *testing.T) {
	t.Parallel()
	testkit.EachDialect(t, func(t *testing.T, st *store.Store) {
		ctx := context.Background()
		s := newStep(t, st, "")
		in := s.intent(models.NewID(), "old")
		in.CreatedAt = time.Now().Add(-time.Hour)
		require.NoError(t, st.DB.Create(&in).Error)
		n, err := intent.Sweep(ctx, st, time.Now())
		require.NoError(t, err)
		require.Equal(t, 1, n)
		var left int64
		require.NoError(t, st.DB.Model(&models.WriteIntent{}).Count(&left).Error)
		require.Zero(t, left)
		rows := feedOf(t, st, s.TaskID)
		require.Len(t, rows, 1)
		require.Equal(t, in.ID, *rows[0].IntentID)
	})
}

// TestASettleTakesTheTaskLockBeforeDrawingAnId: while a feed reader holds a
// task's lock, a settle must wait without drawing a feed id; ids drawn and
// committed behind a reader's back are what a cursor would skip.
func TestASettleTakesTheTaskLockBeforeDrawingAnId(t *testing.T) {
	t.Parallel()
	st := testkit.Schema(t)
	ctx := context.Background()
	s := newStep(t, st, "")
	_, opened := open(t, st, s.intent(models.NewID(), "zero"), s.intent(models.NewID(), "one"))
	complete := func(in models.WriteIntent) error {
		_, err := intent.Apply(ctx, st.DB, intent.Batch{Complete: []intent.Completion{{Intent: in, Type: models.FeedAgentAction, RowsAffected: 1}}})
		return err
	}
	require.NoError(t, complete(opened[0])) // the sequence has been called once
	lastValue := func() int64 {
		var v int64
		require.NoError(t, st.DB.Raw("SELECT last_value FROM feed_events_id_seq").Scan(&v).Error)
		return v
	}
	before := lastValue()
	reader := st.DB.Begin()
	t.Cleanup(func() { reader.Rollback() })
	require.NoError(t, reader.Exec("SELECT pg_advisory_xact_lock(hashtext('feed:' || ?::text))", s.TaskID).Error)

	done := make(chan error, 1)
	go func() { done <- complete(opened[1]) }()
	select {
	case err := <-done:
		t.Fatalf("the settle finished while a reader held the task lock: %v", err)
	case <-time.After(300 * time.Millisecond):
	}
	require.Equal(t, before, lastValue(), "no id was drawn while waiting for the lock")
	require.NoError(t, reader.Commit().Error)
	require.NoError(t, <-done)
	require.Len(t, feedOf(t, st, s.TaskID), 2)
}
