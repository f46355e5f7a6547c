package intent

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

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
