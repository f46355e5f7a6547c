package bindingspec

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"
)

// Each kind of op gets an example of the payload shape the runtime API
// takes for it; the session's own placeholders and a write's fixed values
// are never asked for.
func TestExamplePayload(t *testing.T) {
	spec := Spec{
		Reads: []Read{
			{Op: "list", Table: "invoices", Columns: []string{"id", "vendor"}, Filterable: []string{"vendor"}},
			{Op: "small", Table: "invoices", Columns: []string{"id"}, Limit: 3},
		},
		Writes: []Write{
			{Op: "set_status", Table: "invoices", Mode: ModeUpdate, KeyColumns: []string{"id"}, Columns: []string{"status"}},
			{Op: "decide", Table: "decisions", Mode: ModeInsert, Columns: []string{"decision", "task_id"},
				FixedValues: map[string]any{"task_id": "{{task_id}}"}},
		},
		HTTPCalls: []HTTPCall{{
			Op: "notify", Method: "POST", URL: "https://{{tenant}}.example.com/v1/{{channel}}",
			Query:        map[string]string{"task": "{{task_id}}"},
			Headers:      map[string]string{"X-Ref": "{{ref}}"},
			BodyTemplate: json.RawMessage(`{"text": "{{message}}", "tags": ["{{tag}}"], "step": "{{step_id}}"}`),
		}},
		Actions: []Action{
			{Name: "approve", Writes: []string{"decide"}, HTTPCalls: []string{"notify"}},
			{Name: "empty"},
		},
	}
	for _, tc := range []struct{ kind, name, want string }{
		{"read", "list", `{"columns": ["id", "vendor"], "limit": 10}`},
		{"read", "small", `{"columns": ["id"], "limit": 3}`},
		{"write", "set_status", `{"row": {"id": null, "status": null}}`},
		{"write", "decide", `{"row": {"decision": null}}`},
		{"http_call", "notify", `{"channel": "", "message": "", "ref": "", "tag": "", "tenant": ""}`},
		{"action", "approve", `{"rows": {"decide": {"decision": null}}, "values": {"channel": "", "message": "", "ref": "", "tag": "", "tenant": ""}}`},
		{"action", "empty", `{}`},
	} {
		got, ok := ExamplePayload(spec, tc.kind, tc.name)
		require.True(t, ok, tc.name)
		require.JSONEq(t, tc.want, string(got), tc.name)
	}
	for _, tc := range []struct{ kind, name string }{{"read", "nope"}, {"write", "list"}, {"tool", "list"}, {"action", "notify"}} {
		_, ok := ExamplePayload(spec, tc.kind, tc.name)
		require.False(t, ok, "%s %s", tc.kind, tc.name)
	}
}
