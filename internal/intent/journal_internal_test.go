package intent

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/appruntime/appruntime/internal/store"
	"github.com/appruntime/appruntime/internal/testkit"
	"github.com/appruntime/appruntime/models"
)

// A journal writer's statements are never compiled by the server's JIT,
// even where a plan's estimate crosses jit_above_cost: the settle writer
// prices sequential scans out, so a plan that still needs one (here the
// sequence read of the open statement) would be compiled on every call.
func TestJournalWritersNeverJITCompile(t *testing.T) {
	t.Parallel()
	st := testkit.Schema(t)
	ctx := context.Background()
	const seqRead = "EXPLAIN (ANALYZE, FORMAT JSON) SELECT last_value FROM feed_events_id_seq"
	explain := func(t *testing.T, w *writer) (cost float64, jit bool) {
		t.Helper()
		var out string
		require.NoError(t, w.conn.QueryRowContext(ctx, seqRead).Scan(&out))
		var plans []struct {
			Plan struct {
				TotalCost float64 `json:"Total Cost"`
			}
			JIT json.RawMessage
		}
		require.NoError(t, json.Unmarshal([]byte(out), &plans))
		require.Len(t, plans, 1)
		return plans[0].Plan.TotalCost, plans[0].JIT != nil
	}
	var jitAvailable bool
	require.NoError(t, st.DB.Raw("SELECT pg_jit_available()").Scan(&jitAvailable).Error)
	for name, setup := range map[string][]string{"open": openSetup, "settle": settleSetup} {
		t.Run(name, func(t *testing.T) {
			w := &writer{st: st, setup: setup}
			defer w.close()
			_, err := w.apply(Batch{Done: []string{models.NewID()}}) // sets its connection up
			require.NoError(t, err)
			_, err = w.conn.ExecContext(ctx, "SET enable_seqscan = off") // the settle writer's; the open writer's estimate too
			require.NoError(t, err)
			cost, jit := explain(t, w)
			var threshold float64
			require.NoError(t, w.conn.QueryRowContext(ctx, "SELECT current_setting('jit_above_cost')::float8").Scan(&threshold))
			require.Greater(t, cost, threshold, "the plan's estimate crosses the threshold")
			require.False(t, jit, "a writer's statement is not JIT-compiled")

			if jitAvailable { // the same plan on a connection that allows JIT is compiled
				_, err = w.conn.ExecContext(ctx, "SET jit = on")
				require.NoError(t, err)
				_, jit = explain(t, w)
				require.True(t, jit)
			}
		})
	}
}

// A settle writer whose connection the server closed while it was idle (a
// restart) settles its next batch on a new connection, instead of failing
// it and leaving a committed write for the sweep to record as unknown.
func TestTheSettleWriterReconnectsAfterTheServerClosedItsConnection(t *testing.T) {
	t.Parallel()
	st := testkit.Schema(t)
	ctx := context.Background()
	tn := testkit.NewTenant(t, st.DB)
	task := models.Task{ID: models.NewID(), WorkspaceID: tn.Workspace.ID, AgentID: tn.Agent.ID, Title: "t", Status: models.TaskRunning}
	require.NoError(t, st.DB.Create(&task).Error)
	step := models.Step{ID: models.NewID(), TaskID: task.ID, Kind: models.StepAppTool, Status: models.StepRunning}
	require.NoError(t, st.DB.Create(&step).Error)

	w := &writer{st: st, setup: settleSetup, reconnectFor: settleReconnectFor}
	t.Cleanup(w.close)
	write := func(i int) error {
		in := models.WriteIntent{ID: models.NewID(), TaskID: task.ID, StepID: step.ID, Name: "w", Actor: "user:x",
			Owner: models.NewID(), Payload: models.MustJSON(map[string]int{"i": i})}
		batch := models.NewID()
		in.BatchID = batch
		if _, err := w.apply(Batch{ID: batch, Open: []models.WriteIntent{in}}); err != nil {
			return err
		}
		_, err := w.apply(Batch{Complete: []Completion{{Intent: in, Type: models.FeedAgentAction,
			Payload: models.MustJSON(map[string]int{"i": i, "rows_affected": 1})}}})
		return err
	}
	require.NoError(t, write(1))
	var pid int
	require.NoError(t, w.conn.QueryRowContext(ctx, "SELECT pg_backend_pid()").Scan(&pid))
	require.NoError(t, st.DB.Exec("SELECT pg_terminate_backend(?)", pid).Error)
	time.Sleep(idleCheck + 100*time.Millisecond)

	require.NoError(t, write(2), "the next batch goes on a new connection")
	var rows int64
	require.NoError(t, st.DB.Model(&models.FeedEvent{}).Where("task_id = ? AND type = ?", task.ID, models.FeedAgentAction).Count(&rows).Error)
	require.Equal(t, int64(2), rows)
}

// settleFixture is a task with an app-tool step and an intent on it opened
// (by an owner that holds no lock), to settle on a settle writer.
func settleFixture(t *testing.T) (*store.Store, models.WriteIntent, Completion) {
	t.Helper()
	st := testkit.Schema(t)
	tn := testkit.NewTenant(t, st.DB)
	task := models.Task{ID: models.NewID(), WorkspaceID: tn.Workspace.ID, AgentID: tn.Agent.ID, Title: "t", Status: models.TaskRunning}
	require.NoError(t, st.DB.Create(&task).Error)
	step := models.Step{ID: models.NewID(), TaskID: task.ID, Kind: models.StepAppTool, Status: models.StepRunning}
	require.NoError(t, st.DB.Create(&step).Error)
	in := models.WriteIntent{ID: models.NewID(), TaskID: task.ID, StepID: step.ID, Name: "w", Actor: "user:x",
		Owner: models.NewID(), BatchID: models.NewID(), Payload: models.MustJSON(map[string]int{"i": 1})}
	_, err := Apply(context.Background(), st.DB, Batch{ID: in.BatchID, Open: []models.WriteIntent{in}})
	require.NoError(t, err)
	return st, in, Completion{Intent: in, Type: models.FeedAgentAction, RowsAffected: 1}
}

// feedRowsOf counts the feed rows of type typ naming in.
func feedRowsOf(t *testing.T, st *store.Store, in models.WriteIntent, typ string) int64 {
	t.Helper()
	var n int64
	require.NoError(t, st.DB.Model(&models.FeedEvent{}).Where("task_id = ? AND intent_id = ? AND type = ?", in.TaskID, in.ID, typ).Count(&n).Error)
	return n
}

// A settle whose connection the server ends with the statement in flight
// (a restart's admin_shutdown, here pg_terminate_backend while it waits
// for a lock) is applied again on a new connection until it lands, and
// lands once: the write it records was acknowledged, and the sweep must not
// be left to record it as unknown.
func TestASettleCutMidFlightIsAppliedAgainUntilItLands(t *testing.T) {
	t.Parallel()
	st, in, c := settleFixture(t)
	ctx := context.Background()
	w := &writer{st: st, setup: settleSetup, reconnectFor: settleReconnectFor}
	t.Cleanup(w.close)
	_, err := w.apply(Batch{Done: []string{models.NewID()}}) // its connection, set up
	require.NoError(t, err)
	var pid int
	require.NoError(t, w.conn.QueryRowContext(ctx, "SELECT pg_backend_pid()").Scan(&pid))

	// The batch's row locked elsewhere: the settle waits on it, in flight.
	blocker, err := st.SQL().BeginTx(ctx, nil)
	require.NoError(t, err)
	defer blocker.Rollback() //nolint:errcheck
	_, err = blocker.ExecContext(ctx, "SELECT 1 FROM write_intent_batches WHERE id = $1 FOR UPDATE", in.BatchID)
	require.NoError(t, err)

	type answer struct {
		applied Applied
		err     error
	}
	done := make(chan answer, 1)
	go func() {
		applied, err := w.apply(Batch{Complete: []Completion{c}})
		done <- answer{applied, err}
	}()
	waiting := func() bool {
		var n int
		require.NoError(t, st.DB.Raw("SELECT count(*) FROM pg_stat_activity WHERE pid = ? AND wait_event_type = 'Lock'", pid).Scan(&n).Error)
		return n == 1
	}
	require.Eventually(t, waiting, 10*time.Second, 10*time.Millisecond, "the settle waits on the batch's lock")
	require.NoError(t, st.DB.Exec("SELECT pg_terminate_backend(?)", pid).Error)
	time.Sleep(200 * time.Millisecond) // the settle, applied again, waits on the same lock
	require.NoError(t, blocker.Commit())

	a := <-done
	require.NoError(t, a.err, "the settle is applied again on a new connection")
	require.Empty(t, a.applied.Missing, "and reports its feed row written")
	require.EqualValues(t, 1, feedRowsOf(t, st, in, models.FeedAgentAction))
}

// Applying a settle again after one that committed (its answer lost)
// writes nothing twice and reports the row written; after a sweep recorded
// the intent as unknown, it writes nothing and reports the row missing.
func TestASettleAppliedAgainWritesNothingTwice(t *testing.T) {
	t.Parallel()
	st, in, c := settleFixture(t)
	ctx := context.Background()
	conn, err := st.SQL().Conn(ctx)
	require.NoError(t, err)
	defer conn.Close()

	_, err = ApplyOn(ctx, conn, Batch{Complete: []Completion{c}}, new(Scratch))
	require.NoError(t, err)
	for range 2 {
		applied, err := ReapplyOn(ctx, conn, Batch{Complete: []Completion{c}}, new(Scratch))
		require.NoError(t, err)
		require.Empty(t, applied.Missing)
	}
	require.EqualValues(t, 1, feedRowsOf(t, st, in, models.FeedAgentAction))

	// Another intent, which a sweep recorded as unknown (its owner holds
	// no lock) before its settle was applied again.
	lost := in
	lost.ID, lost.BatchID, lost.Owner = models.NewID(), models.NewID(), models.NewID()
	_, err = Apply(ctx, st.DB, Batch{ID: lost.BatchID, Open: []models.WriteIntent{lost}})
	require.NoError(t, err)
	n, err := Sweep(ctx, st, time.Now())
	require.NoError(t, err)
	require.Equal(t, 1, n, "the sweep records the other intent only, the first has its row")
	c.Intent = lost
	applied, err := ReapplyOn(ctx, conn, Batch{Complete: []Completion{c}}, new(Scratch))
	require.NoError(t, err)
	require.True(t, applied.Missing[lost.ID])
	require.EqualValues(t, 0, feedRowsOf(t, st, lost, models.FeedAgentAction))
	require.EqualValues(t, 1, feedRowsOf(t, st, lost, models.FeedAgentActionUnknown))
}

// An owner whose lock connection the server ended (a restart, a
// terminated backend) takes its lock again on the same id, so its intents
// in flight stay a live owner's: a sweep after that leaves them, and their
// completions land.
func TestAnOwnerWhoseLockConnectionEndedKeepsItsIntents(t *testing.T) {
	t.Parallel()
	st, in, c := settleFixture(t)
	ctx := context.Background()
	n, err := Sweep(ctx, st, time.Now())
	require.NoError(t, err)
	require.Equal(t, 1, n, "the fixture's intent, whose owner holds no lock")
	j := NewJournal(st, nil)
	t.Cleanup(j.Close)
	in.ID, in.BatchID, in.Owner = models.NewID(), "", ""
	in, opened, err := j.Open(ctx, in)
	require.NoError(t, err)
	require.True(t, opened)

	j.ownerMu.Lock()
	o := j.owner
	j.ownerMu.Unlock()
	o.mu.Lock()
	conn := o.conn
	o.mu.Unlock()
	var pid int
	require.NoError(t, conn.QueryRowContext(ctx, "SELECT pg_backend_pid()").Scan(&pid))
	require.NoError(t, st.DB.Exec("SELECT pg_terminate_backend(?)", pid).Error)
	held := func() bool {
		var n int
		require.NoError(t, st.DB.Raw("SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND granted AND classid = ? "+
			"AND objid = hashtext(?)::oid AND objsubid = 2 AND pid <> ?", ownerLockClass, in.Owner, pid).Scan(&n).Error)
		o.mu.Lock()
		defer o.mu.Unlock()
		return n > 0 && o.conn != conn
	}
	require.Eventually(t, held, 4*ownerCheckInterval, 50*time.Millisecond, "the owner takes a lock again")
	require.Equal(t, in.Owner, o.ID(), "on its own id")

	n, err = Sweep(ctx, st, time.Now())
	require.NoError(t, err)
	require.Zero(t, n, "a live owner's intent is not recorded as unknown")
	c.Intent = in
	done, err := j.Complete(ctx, c)
	require.NoError(t, err)
	require.True(t, done, "its completion lands")
	require.EqualValues(t, 1, feedRowsOf(t, st, in, models.FeedAgentAction))
	require.EqualValues(t, 0, feedRowsOf(t, st, in, models.FeedAgentActionUnknown))
}
