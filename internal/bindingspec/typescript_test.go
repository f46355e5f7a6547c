package bindingspec

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// The declarations name each op under its verb with the keys the runtime
// takes and nothing else: a write's fixed values, the session's
// placeholders, a host capability and an http_call shadowed by a read of
// the same name are left out; an update's key column is required.
func TestTypeScriptDeclaresEachOpWithItsKeys(t *testing.T) {
	t.Parallel()
	spec := Spec{
		Reads: []Read{{Op: "list", Table: "invoices", Columns: []string{"id", "vendor"}, Filterable: []string{"vendor"}}},
		Writes: []Write{
			{Op: "set_status", Table: "invoices", Mode: ModeUpdate, KeyColumns: []string{"id"}, Columns: []string{"status"}},
			{Op: "note", Table: "notes", Mode: ModeInsert, Columns: []string{"text"}, FixedValues: map[string]any{"task_id": "{{task_id}}"}},
		},
		HTTPCalls: []HTTPCall{
			{Op: "vendor", Method: "GET", URL: "https://erp.example.com/v/{{vendor_id}}?t={{task_id}}"},
			{Op: "list", Method: "GET", URL: "https://erp.example.com/shadowed/{{shadowed_key}}"},
		},
		Actions:      []Action{{Name: "approve", Writes: []string{"note"}, HTTPCalls: []string{"vendor"}}, {Name: "bare"}},
		Capabilities: []string{"document_selection"},
	}
	ts := TypeScript(spec, "generated for a test\nsecond line")
	for _, want := range []string{
		"// generated for a test\n// second line\n",
		`from "@appruntime/sdk";`,
		`"list": { payload: { columns?: ("id" | "vendor")[]; filters?: { "vendor"?: Filter }; cursor?: string; limit?: number /* at most 100 */ }; result: RowsResult<"id" | "vendor"> };`,
		`"vendor": { payload: { "vendor_id": JSONValue }; result: HTTPResult };`,
		`"set_status": { payload: { row: { "status"?: JSONValue; "id": JSONValue } }; result: WriteResult };`,
		`"note": { payload: { row: { "text"?: JSONValue } }; result: WriteResult };`,
		`"approve": { payload: { rows?: { "note"?: { "text"?: JSONValue } }; values: { "vendor_id": JSONValue } }; result: ActionResult };`,
		`"bare": { payload: Record<string, never>; result: ActionResult };`,
		"  run: {};\n",
		`capability: Pick<Capabilities, "file_preview" | "list_files" | "split_document" | "get_translation">;`,
		"export type Runtime = AppRuntime<Ops>;",
	} {
		require.Contains(t, ts, want)
	}
	for _, absent := range []string{"task_id", "shadowed_key", "document_selection"} {
		require.NotContains(t, ts, absent)
	}
	require.Equal(t, ts, TypeScript(spec, "generated for a test\nsecond line"), "deterministic")
	require.Equal(t, 1, strings.Count(ts, `"list":`), "the read wins over the http_call of its name")
}
