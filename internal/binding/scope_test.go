package binding_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/appruntime/appruntime/internal/apperr"
	"github.com/appruntime/appruntime/internal/binding"
	"github.com/appruntime/appruntime/internal/testkit"
	"github.com/appruntime/appruntime/models"
)

// writeOp is a write op on decisions with the given mode, keys and fixed values.
func writeOp(mode string, keys []string, fixed map[string]any) binding.Write {
	return binding.Write{Op: "save_decision", Table: "decisions", Mode: mode, KeyColumns: keys,
		Columns: []string{"decision"}, FixedValues: fixed}
}

// TestFixedValuesOfUpdatesMustBeKeyColumns: an update or upsert's fixed
// value scopes the row (a key column); it may never overwrite the column of
// a row the request names, which would take another task's row over.
func TestFixedValuesOfUpdatesMustBeKeyColumns(t *testing.T) {
	t.Parallel()
	st := testkit.Tx(t)
	tn := testkit.NewTenant(t, st.DB)
	in := models.Integration{ID: models.NewID(), WorkspaceID: tn.Workspace.ID, Name: "db", Kind: binding.IntegrationPostgres}
	require.NoError(t, st.DB.Create(&in).Error)
	task := map[string]any{"task_id": "{{task_id}}"}
	cases := []struct {
		name    string
		op      binding.Write
		message string // "" when valid
	}{
		{"insert with a fixed value", writeOp(binding.ModeInsert, nil, task), ""},
		{"update scoped by a fixed key", writeOp(binding.ModeUpdate, []string{"id", "task_id"}, task), ""},
		{"upsert scoped by a fixed key", writeOp(binding.ModeUpsert, []string{"id", "task_id"}, task), ""},
		{"update without fixed values", writeOp(binding.ModeUpdate, []string{"id"}, nil), ""},
		{"update overwriting task_id", writeOp(binding.ModeUpdate, []string{"id"}, task),
			`writes[0] "save_decision": fixed_values column "task_id" must also be one of key_columns in mode update`},
		{"upsert overwriting task_id", writeOp(binding.ModeUpsert, []string{"id"}, task),
			`writes[0] "save_decision": fixed_values column "task_id" must also be one of key_columns in mode upsert`},
		{"update with one fixed key and one overwritten column", writeOp(binding.ModeUpdate, []string{"id", "task_id"},
			map[string]any{"task_id": "{{task_id}}", "agent_id": "{{agent_id}}", "workspace_id": "{{workspace_id}}"}),
			`fixed_values column "agent_id" must also be one of key_columns`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			raw, err := json.Marshal(binding.Spec{Writes: []binding.Write{tc.op}})
			require.NoError(t, err)
			_, err = binding.Validate(context.Background(), st.DB, tn.Workspace.ID, binding.Input{
				Name: "b", BindingKind: binding.KindPostgres, IntegrationID: in.ID, AllowedOperations: raw,
			})
			if tc.message == "" {
				require.NoError(t, err)
				require.Empty(t, tc.op.UnscopedFixedColumn())
				return
			}
			require.Equal(t, apperr.Invalid, apperr.CodeOf(err), "%v", err)
			_, _, msg := apperr.Public(err)
			require.Contains(t, msg, tc.message)
			require.NotEmpty(t, tc.op.UnscopedFixedColumn())
		})
	}
}

// TestFindUnscopedWritesReportsSavedBindings: bindings saved before the rule
// are found in every workspace, op by op; valid ones are not.
func TestFindUnscopedWritesReportsSavedBindings(t *testing.T) {
	t.Parallel()
	st := testkit.Tx(t)
	a, b := testkit.NewTenant(t, st.DB), testkit.NewTenant(t, st.DB)
	save := func(ws string, writes ...binding.Write) string {
		row := models.Binding{ID: models.NewID(), WorkspaceID: ws, Name: "saved " + ws[:8], BindingKind: binding.KindPostgres,
			AllowedOperations: models.MustJSON(binding.Spec{Writes: writes}), Version: 1}
		require.NoError(t, st.DB.Create(&row).Error)
		return row.ID
	}
	task := map[string]any{"task_id": "{{task_id}}"}
	bad := save(a.Workspace.ID, writeOp(binding.ModeInsert, nil, task), writeOp(binding.ModeUpdate, []string{"id"}, task))
	worse := save(b.Workspace.ID, writeOp(binding.ModeUpsert, []string{"id"}, map[string]any{"task_id": "{{task_id}}", "agent_id": "x"}))
	save(b.Workspace.ID, writeOp(binding.ModeUpdate, []string{"id", "task_id"}, task))

	found, err := binding.FindUnscopedWrites(context.Background(), st.DB)
	require.NoError(t, err)
	got := map[string]binding.Unscoped{}
	for _, f := range found {
		got[f.BindingID] = f.Unscoped
	}
	require.Equal(t, map[string]binding.Unscoped{
		bad:   {Op: "save_decision", Mode: binding.ModeUpdate, Column: "task_id"},
		worse: {Op: "save_decision", Mode: binding.ModeUpsert, Column: "agent_id"},
	}, got)
	require.Contains(t, got[bad].String(), `write op "save_decision" (mode update): fixed_values column "task_id" is not one of its key_columns`)
}
