package binding_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/appruntime/appruntime/internal/binding"
	"github.com/appruntime/appruntime/internal/bindingspec"
	"github.com/appruntime/appruntime/internal/testkit"
	"github.com/appruntime/appruntime/models"
)

// writeOp is a write op on decisions with the given mode, keys and fixed values.
func writeOp(mode string, keys []string, fixed map[string]any) bindingspec.Write {
	return bindingspec.Write{Op: "save_decision", Table: "decisions", Mode: mode, KeyColumns: keys,
		Columns: []string{"decision"}, FixedValues: fixed}
}

// TestFindUnscopedWritesReportsSavedBindings: bindings saved before the rule
// are found in every workspace, op by op; valid ones are not.
func TestFindUnscopedWritesReportsSavedBindings(t *testing.T) {
	t.Parallel()
	st := testkit.Tx(t)
	a, b := testkit.NewTenant(t, st.DB), testkit.NewTenant(t, st.DB)
	save := func(ws string, writes ...bindingspec.Write) string {
		row := models.Binding{ID: models.NewID(), WorkspaceID: ws, Name: "saved " + ws[:8], BindingKind: bindingspec.KindPostgres,
			AllowedOperations: models.MustJSON(bindingspec.Spec{Writes: writes}), Version: 1}
		require.NoError(t, st.DB.Create(&row).Error)
		return row.ID
	}
	task := map[string]any{"task_id": "{{task_id}}"}
	bad := save(a.Workspace.ID, writeOp(bindingspec.ModeInsert, nil, task), writeOp(bindingspec.ModeUpdate, []string{"id"}, task))
	worse := save(b.Workspace.ID, writeOp(bindingspec.ModeUpsert, []string{"id"}, map[string]any{"task_id": "{{task_id}}", "agent_id": "x"}))
	save(b.Workspace.ID, writeOp(bindingspec.ModeUpdate, []string{"id", "task_id"}, task))

	found, err := binding.FindUnscopedWrites(context.Background(), st.DB)
	require.NoError(t, err)
	got := map[string]bindingspec.Unscoped{}
	for _, f := range found {
		got[f.BindingID] = f.Unscoped
	}
	require.Equal(t, map[string]bindingspec.Unscoped{
		bad:   {Op: "save_decision", Mode: bindingspec.ModeUpdate, Column: "task_id"},
		worse: {Op: "save_decision", Mode: bindingspec.ModeUpsert, Column: "agent_id"},
	}, got)
	require.Contains(t, got[bad].String(), `write op "save_decision" (mode update): fixed_values column "task_id" is not one of its key_columns`)
}
