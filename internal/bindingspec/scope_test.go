package bindingspec_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/appruntime/appruntime/internal/apperr"
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

// TestFixedValuesOfUpdatesMustBeKeyColumns: an update or upsert's fixed
// value scopes the row (a key column); it may never overwrite the column of
// a row the request names, which would take another task's row over.
func TestFixedValuesOfUpdatesMustBeKeyColumns(t *testing.T) {
	t.Parallel()
	st := testkit.Tx(t)
	tn := testkit.NewTenant(t, st.DB)
	in := models.Integration{ID: models.NewID(), WorkspaceID: tn.Workspace.ID, Name: "db", Kind: bindingspec.IntegrationPostgres}
	require.NoError(t, st.DB.Create(&in).Error)
	task := map[string]any{"task_id": "{{task_id}}"}
	cases := []struct {
		name    string
		op      bindingspec.Write
		message string // "" when valid
	}{
		{"insert with a fixed value", writeOp(bindingspec.ModeInsert, nil, task), ""},
		{"update scoped by a fixed key", writeOp(bindingspec.ModeUpdate, []string{"id", "task_id"}, task), ""},
		{"upsert scoped by a fixed key", writeOp(bindingspec.ModeUpsert, []string{"id", "task_id"}, task), ""},
		{"update without fixed values", writeOp(bindingspec.ModeUpdate, []string{"id"}, nil), ""},
		{"update overwriting task_id", writeOp(bindingspec.ModeUpdate, []string{"id"}, task),
			`writes[0] "save_decision": fixed_values column "task_id" must also be one of key_columns in mode update`},
		{"upsert overwriting task_id", writeOp(bindingspec.ModeUpsert, []string{"id"}, task),
			`writes[0] "save_decision": fixed_values column "task_id" must also be one of key_columns in mode upsert`},
		{"update with one fixed key and one overwritten column", writeOp(bindingspec.ModeUpdate, []string{"id", "task_id"},
			map[string]any{"task_id": "{{task_id}}", "agent_id": "{{agent_id}}", "workspace_id": "{{workspace_id}}"}),
			`fixed_values column "agent_id" must also be one of key_columns`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			raw, err := json.Marshal(bindingspec.Spec{Writes: []bindingspec.Write{tc.op}})
			require.NoError(t, err)
			_, err = bindingspec.Validate(context.Background(), binding.WorkspaceOf(st.DB, tn.Workspace.ID), bindingspec.Input{
				Name: "b", BindingKind: bindingspec.KindPostgres, IntegrationID: in.ID, AllowedOperations: raw,
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
