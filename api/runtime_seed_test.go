package api_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/appruntime/appruntime/internal/apperr"
	"github.com/appruntime/appruntime/internal/runtime"
	"github.com/appruntime/appruntime/internal/session"
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
		_, err := seed(runtime.SeedWrite{Op: "set_status", Row: map[string]any{"id": 2, "status": "half"}}, tc.row)
		require.Error(t, err, name)
		require.Equal(t, tc.code, apperr.CodeOf(err), "%s: %v", name, err)
	}
	var half int64
	require.NoError(t, f.source.DB.Raw(`SELECT count(*) FROM invoices WHERE status = 'half'`).Scan(&half).Error)
	require.Zero(t, half, "a refused seed writes nothing")
}
