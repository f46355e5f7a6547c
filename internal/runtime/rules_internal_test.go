package runtime

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/appruntime/appruntime/internal/apperr"
	"github.com/appruntime/appruntime/internal/bindingspec"
	"github.com/appruntime/appruntime/internal/session"
)

// rulesSession is the session the rule tables run as.
var rulesSession = session.Claims{TaskID: "t1", AgentID: "a1", StepID: "s1", WorkspaceID: "w1", SessionID: "x"}

func TestFillFixed(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		in   any
		want any
		err  string
	}{
		{"one whole placeholder", "{{task_id}}", "t1", ""},
		{"placeholders within text", "bundle {{step_id}} of {{agent_id}}", "bundle s1 of a1", ""},
		{"text without placeholders", "approved", "approved", ""},
		{"an integral number binds as an integer", float64(7), json.Number("7"), ""},
		{"a fraction stays a fraction", 2.5, json.Number("2.5"), ""},
		{"a json.Number is kept", json.Number("12"), json.Number("12"), ""},
		{"a boolean is kept", true, true, ""},
		{"null is kept", nil, nil, ""},
		{"a name that is no session value", "{{reviewer}}", nil, "{{reviewer}} is not a session value"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := fillFixed(tc.in, rulesSession.Values())
			if tc.err != "" {
				require.EqualError(t, err, tc.err)
				return
			}
			require.NoError(t, err)
			require.Equal(t, tc.want, got)
		})
	}
	// A bad fixed value is the binding's fault, never the request's: 500.
	_, err := fixedMap(map[string]any{"owner": "{{user_id}}"}, rulesSession)
	require.Equal(t, apperr.Internal, apperr.CodeOf(err))
	got, err := fixedMap(nil, rulesSession)
	require.NoError(t, err)
	require.Nil(t, got)
}

func TestWriteStmt(t *testing.T) {
	t.Parallel()
	task := map[string]any{"task_id": "{{task_id}}"}
	insert := &bindingspec.Write{Op: "record", Table: "decisions", Mode: bindingspec.ModeInsert, Columns: []string{"decision"}, FixedValues: task}
	update := &bindingspec.Write{Op: "save", Table: "lines", Mode: bindingspec.ModeUpdate, KeyColumns: []string{"id"}, Columns: []string{"qty"}}
	scoped := &bindingspec.Write{Op: "save", Table: "lines", Mode: bindingspec.ModeUpsert, KeyColumns: []string{"id", "task_id"}, Columns: []string{"qty"}, FixedValues: task}
	unscoped := &bindingspec.Write{Op: "reassign", Table: "lines", Mode: bindingspec.ModeUpdate, KeyColumns: []string{"id"}, Columns: []string{"qty"}, FixedValues: task}
	for _, tc := range []struct {
		name string
		op   *bindingspec.Write
		row  map[string]any
		want map[string]any
		code apperr.Code
		msg  string
	}{
		{"insert adds the fixed values", insert, map[string]any{"decision": "ok"}, map[string]any{"decision": "ok", "task_id": "t1"}, "", ""},
		{"insert of no columns still writes the fixed ones", insert, map[string]any{}, map[string]any{"task_id": "t1"}, "", ""},
		{"a column not declared", insert, map[string]any{"amount": 1}, nil, apperr.Forbidden, `column "amount" is not writable through op "record"`},
		{"a fixed column sent by the request", insert, map[string]any{"task_id": "other"}, nil, apperr.Forbidden, `column "task_id" is not writable through op "record"`},
		{"update by key", update, map[string]any{"id": 1, "qty": 2}, map[string]any{"id": 1, "qty": 2}, "", ""},
		{"update without its key", update, map[string]any{"qty": 2}, nil, apperr.Invalid, `key column "id" is required for op "save"`},
		{"update that sets nothing", update, map[string]any{"id": 1}, nil, apperr.Invalid, `op "save": the row sets no column to update`},
		{"a fixed key column wins over the request's", scoped, map[string]any{"id": 1, "task_id": "other", "qty": 3}, map[string]any{"id": 1, "task_id": "t1", "qty": 3}, "", ""},
		{"a fixed key column need not be sent", scoped, map[string]any{"id": 1, "qty": 3}, map[string]any{"id": 1, "task_id": "t1", "qty": 3}, "", ""},
		{"an unscoped fixed value disables the op", unscoped, map[string]any{"id": 1, "qty": 3}, nil, apperr.Forbidden,
			`write op "reassign" is disabled: its fixed value for column "task_id" is not one of its key columns; an admin must fix the binding`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			stmt, err := writeStmt(tc.op, tc.row, rulesSession)
			if tc.code != "" {
				requireRefusal(t, err, tc.code, tc.msg)
				return
			}
			require.NoError(t, err)
			require.Equal(t, tc.want, stmt.Values)
			require.Equal(t, tc.op.Table, stmt.Table)
			require.Equal(t, tc.op.Mode, stmt.Mode)
			require.Equal(t, tc.op.KeyColumns, stmt.KeyColumns)
		})
	}
}

func TestReadShape(t *testing.T) {
	t.Parallel()
	op := &bindingspec.Read{Op: "list", Table: "lines", Columns: []string{"id", "sku", "qty"}, Filterable: []string{"sku"}, Limit: 50}
	unlimited := &bindingspec.Read{Op: "all", Table: "lines", Columns: []string{"id"}}
	for _, tc := range []struct {
		name    string
		op      *bindingspec.Read
		p       readPayload
		columns []string
		limit   int
		code    apperr.Code
		msg     string
	}{
		{"every declared column by default", op, readPayload{}, []string{"id", "sku", "qty"}, 50, "", ""},
		{"a subset of the columns", op, readPayload{Columns: []string{"qty", "id"}}, []string{"qty", "id"}, 50, "", ""},
		{"a column not declared", op, readPayload{Columns: []string{"id", "price"}}, nil, 0, apperr.Forbidden, `column "price" is not readable through op "list"`},
		{"a filter on a filterable column", op, readPayload{Filters: map[string]any{"sku": "A"}}, []string{"id", "sku", "qty"}, 50, "", ""},
		{"a filter on a column not filterable", op, readPayload{Filters: map[string]any{"qty": 1}}, nil, 0, apperr.Forbidden, `column "qty" is not filterable through op "list"`},
		{"a smaller page", op, readPayload{Limit: 10}, []string{"id", "sku", "qty"}, 10, "", ""},
		{"a larger page is the op's limit", op, readPayload{Limit: 500}, []string{"id", "sku", "qty"}, 50, "", ""},
		{"a negative page", op, readPayload{Limit: -1}, nil, 0, apperr.Invalid, "limit must not be negative"},
		{"an op without a limit pages by the default", unlimited, readPayload{}, []string{"id"}, bindingspec.DefaultReadLimit, "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			columns, limit, err := readShape(tc.op, tc.p)
			if tc.code != "" {
				requireRefusal(t, err, tc.code, tc.msg)
				return
			}
			require.NoError(t, err)
			require.Equal(t, tc.columns, columns)
			require.Equal(t, tc.limit, limit)
		})
	}
}

// requireRefusal checks err's code and the message a bundle gets.
func requireRefusal(t *testing.T, err error, code apperr.Code, msg string) {
	t.Helper()
	require.Equal(t, code, apperr.CodeOf(err), "%v", err)
	_, _, got := apperr.Public(err)
	require.Equal(t, msg, got)
}
