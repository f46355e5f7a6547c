package api_test

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"gorm.io/gorm"

	"github.com/appruntime/appruntime/internal/apperr"
	"github.com/appruntime/appruntime/internal/runtime"
	"github.com/appruntime/appruntime/internal/session"
	"github.com/appruntime/appruntime/models"
)

// A producer's rows go through the binding's write ops into its data source
// in one transaction, so the bundle reads them with no round trip of its
// own; a row the binding refuses leaves nothing written.
func TestSeedWritesRowsTheBundleThenReads(t *testing.T) {
	t.Parallel()
	f := newRuntimeFixture(t)
	ctx := context.Background()
	scope := session.Claims{WorkspaceID: f.tenant.Workspace.ID, TaskID: f.taskID, AgentID: f.tenant.Agent.ID,
		StepID: f.stepID, ConfiguredToolID: f.toolID, BindingID: f.bindingID}
	seed := func(rows ...runtime.SeedWrite) (int64, error) { return f.api.P.Runtime.Seed(ctx, scope, rows) }

	n, err := seed(
		runtime.SeedWrite{Op: "set_status", Row: map[string]any{"id": 1, "status": "seeded"}},
		runtime.SeedWrite{Op: "set_status", Row: map[string]any{"id": 3, "status": "seeded"}},
		runtime.SeedWrite{Op: "record_decision", Row: map[string]any{"decision": "prefilled"}},
	)
	require.NoError(t, err)
	require.Equal(t, int64(3), n)

	r := f.verb(t, "read", map[string]any{"op": "list_invoices", "payload": map[string]any{"filters": map[string]any{"status": "seeded"}}})
	require.Equal(t, 200, r.Status, string(r.Raw))
	require.Equal(t, float64(2), r.Body["row_count"], string(r.Raw))
	require.Equal(t, []any{float64(3), "Globex", float64(30), "seeded"}, r.Body["rows"].([]any)[1])
	var taskID string
	require.NoError(t, f.source.DB.Raw(`SELECT task_id FROM decisions WHERE decision = 'prefilled'`).Scan(&taskID).Error)
	require.Equal(t, f.taskID, taskID, "the op's fixed value comes from the step's scope")

	for name, tc := range map[string]struct {
		row  runtime.SeedWrite
		code apperr.Code
	}{
		"an op the binding lacks":   {runtime.SeedWrite{Op: "drop_all", Row: map[string]any{"id": 2}}, apperr.Forbidden},
		"a column not writable":     {runtime.SeedWrite{Op: "set_status", Row: map[string]any{"id": 2, "amount": 0}}, apperr.Forbidden},
		"a missing row":             {runtime.SeedWrite{Op: "set_status"}, apperr.Invalid},
		"a value the table rejects": {runtime.SeedWrite{Op: "record_decision", Row: map[string]any{"decision": nil}}, apperr.Invalid},
	} {
		// Each on a step of its own: a step's rows are seeded once.
		scope := scope
		scope.StepID = f.newRunningStep(t)
		_, err := f.api.P.Runtime.Seed(ctx, scope, []runtime.SeedWrite{{Op: "set_status", Row: map[string]any{"id": 2, "status": "half"}}, tc.row})
		require.Error(t, err, name)
		require.Equal(t, tc.code, apperr.CodeOf(err), "%s: %v", name, err)
	}
	var half int64
	require.NoError(t, f.source.DB.Raw(`SELECT count(*) FROM invoices WHERE status = 'half'`).Scan(&half).Error)
	require.Zero(t, half, "a refused seed writes nothing")
}

// newRunningStep adds an artifact step being built to the fixture's task.
func (f *runtimeFixture) newRunningStep(t *testing.T) string {
	t.Helper()
	step := models.Step{ID: models.NewID(), TaskID: f.taskID, Kind: models.StepAppTool, ConfiguredToolID: &f.toolID, Status: models.StepRunning}
	require.NoError(t, f.api.Store.DB.Create(&step).Error)
	return step.ID
}

// TestSeedOnceAcrossAttempts: a producer retried after its seeding
// transaction committed (a worker killed before the step settled, a settle
// that failed) finds the journaled transaction committed and writes
// nothing again, though its op is insert-only; one whose transaction
// aborted seeds afresh; one whose transaction is still open on the data
// source is told to retry (Unavailable) and writes nothing meanwhile.
func TestSeedOnceAcrossAttempts(t *testing.T) {
	t.Parallel()
	f := newRuntimeFixture(t)
	ctx := context.Background()
	db := f.api.Store.DB
	rows := []runtime.SeedWrite{{Op: "record_decision", Row: map[string]any{"decision": "seeded"}},
		{Op: "record_decision", Row: map[string]any{"decision": "seeded"}}}
	scopeOf := func(stepID string) session.Claims {
		return session.Claims{WorkspaceID: f.tenant.Workspace.ID, TaskID: f.taskID, AgentID: f.tenant.Agent.ID,
			StepID: stepID, ConfiguredToolID: f.toolID, BindingID: f.bindingID}
	}
	decisions := func() int64 {
		var n int64
		require.NoError(t, f.source.DB.Raw(`SELECT count(*) FROM decisions WHERE decision = 'seeded'`).Scan(&n).Error)
		return n
	}
	// sourceTx begins a transaction on the data source and returns its id.
	sourceTx := func() (*gorm.DB, string) {
		tx := f.source.DB.Begin()
		require.NoError(t, tx.Error)
		var id int64
		require.NoError(t, tx.Raw(`SELECT txid_current()`).Scan(&id).Error)
		return tx, strconv.FormatInt(id, 10)
	}

	t.Run("committed: seeded once", func(t *testing.T) {
		step := f.newRunningStep(t)
		before := decisions()
		n, err := f.api.P.Runtime.Seed(ctx, scopeOf(step), rows)
		require.NoError(t, err)
		require.Equal(t, int64(2), n)
		var j models.ProducerSeed
		require.NoError(t, db.Where("step_id = ?", step).Take(&j).Error, "the seeding transaction is journaled")
		n, err = f.api.P.Runtime.Seed(ctx, scopeOf(step), rows)
		require.NoError(t, err, "a retry is no duplicate")
		require.Equal(t, int64(2), n, "a retry reports the rows the first attempt wrote")
		require.Equal(t, before+2, decisions(), "the rows are written once")
	})
	t.Run("aborted: seeded afresh", func(t *testing.T) {
		step := f.newRunningStep(t)
		tx, id := sourceTx()
		require.NoError(t, tx.Rollback().Error)
		require.NoError(t, db.Create(&models.ProducerSeed{StepID: step, SourceTx: id, Rows: 2, CreatedAt: time.Now()}).Error)
		before := decisions()
		n, err := f.api.P.Runtime.Seed(ctx, scopeOf(step), rows)
		require.NoError(t, err)
		require.Equal(t, int64(2), n)
		require.Equal(t, before+2, decisions())
	})
	t.Run("still open: retry later", func(t *testing.T) {
		step := f.newRunningStep(t)
		tx, id := sourceTx()
		require.NoError(t, db.Create(&models.ProducerSeed{StepID: step, SourceTx: id, Rows: 2, CreatedAt: time.Now()}).Error)
		before := decisions()
		_, err := f.api.P.Runtime.Seed(ctx, scopeOf(step), rows)
		require.Equal(t, apperr.Unavailable, apperr.CodeOf(err), "%v", err)
		require.Equal(t, before, decisions(), "nothing written while the earlier attempt may still commit")
		require.NoError(t, tx.Rollback().Error)
		n, err := f.api.P.Runtime.Seed(ctx, scopeOf(step), rows)
		require.NoError(t, err)
		require.Equal(t, int64(2), n)
		require.Equal(t, before+2, decisions())
	})
}
