package bindingspec_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"gorm.io/gorm"

	"github.com/appruntime/appruntime/internal/apperr"
	"github.com/appruntime/appruntime/internal/binding"
	"github.com/appruntime/appruntime/internal/bindingspec"
	"github.com/appruntime/appruntime/internal/testkit"
	"github.com/appruntime/appruntime/models"
)

// ruleFixture is a tenant with the integrations and configured tools a
// binding may name, plus another workspace's, in one test transaction.
type ruleFixture struct {
	db                *gorm.DB
	ws                string
	pg, rest, foreign models.Integration
}

func newRuleFixture(t *testing.T) ruleFixture {
	t.Helper()
	db := testkit.Tx(t).DB
	bt := testkit.NewBindingTargets(t, db)
	return ruleFixture{db: db, ws: bt.Tenant.Workspace.ID, pg: bt.PG, rest: bt.REST, foreign: bt.Foreign}
}

// input builds a binding's content; "-" leaves a field out, and $PG, $REST,
// $FOREIGN and $NOSUCH in ops stand for integration ids.
func (f ruleFixture) input(name, kind, integration, ops string) bindingspec.Input {
	r := strings.NewReplacer("$PG", f.pg.ID, "$REST", f.rest.ID, "$FOREIGN", f.foreign.ID, "$NOSUCH", noSuchIntegration)
	var in bindingspec.Input
	if name != "-" {
		in.Name = name
	}
	if kind != "-" {
		in.BindingKind = kind
	}
	if integration != "-" {
		in.IntegrationID = r.Replace(integration)
	}
	if ops != "-" {
		in.AllowedOperations = json.RawMessage(r.Replace(ops))
	}
	return in
}

// refusal runs Validate and returns the refusal's code and public message.
func (f ruleFixture) refusal(t *testing.T, in bindingspec.Input) (apperr.Code, string) {
	t.Helper()
	_, err := bindingspec.Validate(context.Background(), binding.WorkspaceOf(f.db, f.ws), in)
	require.Error(t, err)
	code, _, msg := apperr.Public(err)
	return code, msg
}

const noSuchIntegration = "01890000-0000-7000-8000-000000000000"

const (
	listOp   = `{"op":"list","table":"lines","columns":["id","sku","qty"]}`
	updateOp = `{"op":"save_line","table":"lines","mode":"update","key_columns":["id"],"columns":["qty"]}`
)

// restRead is a rest read op with extra fields.
func restRead(extra string) string {
	if extra != "" {
		extra = "," + extra
	}
	return `{"op":"list","columns":["id","sku","qty"]` + extra + `}`
}

// call builds an http_calls document around one call.
func oneCall(call string) string { return `{"http_calls":[` + call + `]}` }

// oneTool builds a tools document around one tool op.
func oneTool(tool string) string { return `{"tools":[` + tool + `]}` }

// TestValidateRefusals is every rule a save enforces, each with the exact
// message an admin gets (api/admin_bindings_test.go keeps one HTTP test per
// status code).
func TestValidateRefusals(t *testing.T) {
	t.Parallel()
	f := newRuleFixture(t)
	const namespace = "; op names are one namespace across reads, writes, http_calls and tools"
	const hostRule = " lets a placeholder choose the whole host or its domain; a placeholder may fill one DNS label followed by a literal domain (https://{{tenant}}.example.com/...)"
	const badPlaceholder = ": write {{name}} with letters, digits and _ (not starting with a digit, no spaces)"
	cases := []struct {
		label, name, kind, integration, ops string
		want                                string
	}{
		// The binding itself.
		{"kind other", "b", "mysql", "$PG", `{}`, `binding_kind "mysql" is not supported: use postgres or rest`},
		{"kind absent", "b", "-", "$PG", `{}`, `binding_kind is required: postgres or rest`},
		{"name absent", "-", "postgres", "$PG", `{}`, `name is required`},
		{"name blank", "  ", "postgres", "$PG", `{}`, `name is required`},
		{"ops absent", "b", "postgres", "$PG", "-", `allowed_operations is required: an object such as {"reads": [...], "writes": [...]}`},
		{"ops array", "b", "postgres", "$PG", `[]`, `allowed_operations must be a JSON object`},
		{"ops unknown section", "b", "postgres", "$PG", `{"reads":[],"filters":[]}`,
			`allowed_operations: unknown field "filters" (known: reads, writes, actions, http_calls, tools, capabilities)`},
		{"entry unknown field", "b", "postgres", "$PG", `{"reads":[{"op":"list","table":"t","columns":["a"],"colums":["b"]}]}`,
			`reads[0] "list": unknown field "colums"`},
		{"entry field type", "b", "postgres", "$PG", `{"reads":[{"op":"list","table":"t","columns":["a"],"limit":"10"}]}`,
			`reads[0] "list": limit must be a number, not string`},
		{"section not array", "b", "postgres", "$PG", `{"reads":{}}`, `reads must be an array of objects`},
		{"entry not object", "b", "postgres", "$PG", `{"writes":["x"]}`, `writes[0] must be an object`},

		// Integrations.
		{"postgres without integration", "b", "postgres", "-", `{}`,
			`integration_id is required: a postgres binding reads and writes through a postgres (or dev-only sqlite) data-source integration`},
		{"integration of another workspace", "b", "postgres", "$FOREIGN", `{}`,
			`integration_id "` + f.foreign.ID + `" is not an integration of this workspace`},
		{"integration unknown", "b", "rest", "$NOSUCH", `{}`,
			`integration_id "` + noSuchIntegration + `" is not an integration of this workspace`},
		{"integration not an id", "b", "rest", "crm", `{}`, `integration_id "crm" is not an integration of this workspace`},
		{"postgres over a rest integration", "b", "postgres", "$REST", `{}`,
			`integration_id "` + f.rest.ID + `" is a rest integration; a postgres binding needs a postgres (or dev-only sqlite) data source`},
		// REST bindings: reads and writes are requests against the binding's rest integration.
		{"rest read without integration", "b", "rest", "-", `{"reads":[` + restRead(`"request":{"method":"GET","path":"/lines"}`) + `]}`,
			`reads[0] "list": a rest binding's reads and writes are requests against its integration: integration_id is required`},
		{"rest read over a postgres integration", "b", "rest", "$PG", `{"reads":[` + restRead(`"request":{"method":"GET","path":"/lines"}`) + `]}`,
			`reads[0] "list": integration "` + f.pg.ID + `" is a postgres integration; a rest binding's reads and writes need a rest integration with a base_url`},
		{"rest read without request", "b", "rest", "$REST", `{"reads":[` + restRead(``) + `]}`,
			`reads[0] "list": request is required: a rest binding reads and writes through requests against its integration's base_url`},
		{"rest read with a table", "b", "rest", "$REST", `{"reads":[` + listOp + `]}`,
			`reads[0] "list": table applies to a postgres binding; a rest read names a request`},
		{"rest read with order_by", "b", "rest", "$REST", `{"reads":[` + restRead(`"order_by":[{"column":"id"}]`) + `]}`,
			`reads[0] "list": order_by applies to a postgres binding; a rest read's order is the upstream's`},
		{"rest read with a full url", "b", "rest", "$REST", `{"reads":[` + restRead(`"request":{"method":"GET","path":"https://evil.example/x"}`) + `]}`,
			`reads[0] "list": request.path "https://evil.example/x" must start with a single / (it is appended to the integration's base_url)`},
		{"rest read with a scheme-relative path", "b", "rest", "$REST", `{"reads":[` + restRead(`"request":{"method":"GET","path":"//evil.example/x"}`) + `]}`,
			`reads[0] "list": request.path "//evil.example/x" must start with a single / (it is appended to the integration's base_url)`},
		{"rest read with a bad method", "b", "rest", "$REST", `{"reads":[` + restRead(`"request":{"method":"TRACE","path":"/x"}`) + `]}`,
			`reads[0] "list": request: method "TRACE" is not one of GET, POST, PUT, PATCH, DELETE`},
		{"rest read with a bad placeholder", "b", "rest", "$REST", `{"reads":[` + restRead(`"request":{"method":"GET","path":"/x/{{a b}}"}`) + `]}`,
			`reads[0] "list": request: url: malformed placeholder "{{a b}}"` + badPlaceholder},
		{"rest write with a mode", "b", "rest", "$REST", `{"writes":[{"op":"save","mode":"insert","columns":["qty"],"request":{"method":"POST","path":"/lines"}}]}`,
			`writes[0] "save": mode applies to a postgres binding; a rest write's request method says what it does`},
		{"rest write with a table", "b", "rest", "$REST", `{"writes":[` + updateOp + `]}`,
			`writes[0] "save_line": table applies to a postgres binding; a rest write names a request`},
		{"rest action with a write", "b", "rest", "$REST",
			`{"writes":[{"op":"save","columns":["qty"],"request":{"method":"POST","path":"/lines"}}],"actions":[{"name":"go","writes":["save"]}]}`,
			`actions[0] "go": an action of a rest binding names http_calls only: a rest write cannot be rolled back when a later call fails`},
		{"postgres read with a request", "b", "postgres", "$PG", `{"reads":[{"op":"list","table":"lines","columns":["id"],"request":{"method":"GET","path":"/x"}}]}`,
			`reads[0] "list": request applies to a rest binding; a postgres binding reads its table`},

		// One namespace of ops.
		{"read and write share a name", "b", "postgres", "$PG",
			`{"reads":[` + listOp + `],"writes":[{"op":"list","table":"t","mode":"insert","columns":["a"]}]}`,
			`writes[0] "list": op name "list" is already declared by reads[0] "list"` + namespace},
		{"two reads share a name", "b", "postgres", "$PG", `{"reads":[` + listOp + `,` + listOp + `]}`,
			`reads[1] "list": op name "list" is already declared by reads[0] "list"` + namespace},
		{"http_call and tool share a name", "b", "rest", "-",
			`{"http_calls":[{"op":"lookup","method":"GET","url":"https://crm.example.com/a"}],"tools":[{"op":"lookup","tool":"translate_text"}]}`,
			`tools[0] "lookup": op name "lookup" is already declared by http_calls[0] "lookup"` + namespace},
		{"write and http_call share a name", "b", "postgres", "$PG",
			`{"writes":[` + updateOp + `],"http_calls":[{"op":"save_line","method":"POST","url":"https://crm.example.com/a"}]}`,
			`http_calls[0] "save_line": op name "save_line" is already declared by writes[0] "save_line"` + namespace},
		{"op absent", "b", "postgres", "$PG", `{"reads":[{"table":"t","columns":["a"]}]}`, `reads[0]: op is required`},
		{"op not a name", "b", "postgres", "$PG", `{"reads":[{"op":"list rows","table":"t","columns":["a"]}]}`,
			`reads[0] "list rows": op "list rows" must be at most 100 letters, digits, _, . or -, starting with a letter or _`},

		// Actions.
		{"action declared twice", "b", "postgres", "$PG",
			`{"writes":[` + updateOp + `],"actions":[{"name":"approve","writes":["save_line"]},{"name":"approve","resolves_await":true}]}`,
			`actions[1] "approve": action name "approve" is already declared by actions[0] "approve"`},
		{"action names unknown write", "b", "postgres", "$PG",
			`{"writes":[` + updateOp + `],"actions":[{"name":"approve","writes":["save_line","save_header"]}]}`,
			`actions[0] "approve": names unknown write "save_header"`},
		{"action names a read as a write", "b", "postgres", "$PG",
			`{"reads":[` + listOp + `],"actions":[{"name":"approve","writes":["list"]}]}`,
			`actions[0] "approve": names unknown write "list"`},
		{"action names unknown http_call", "b", "postgres", "$PG",
			`{"writes":[` + updateOp + `],"actions":[{"name":"approve","writes":["save_line"],"http_calls":["export"]}]}`,
			`actions[0] "approve": names unknown http_call "export"`},
		{"action with nothing to do", "b", "postgres", "$PG", `{"actions":[{"name":"noop","feed_event":"nothing"}]}`,
			`actions[0] "noop": the action has nothing to do: name writes or http_calls, or set resolves_await`},
		{"outcome without resolves_await", "b", "postgres", "$PG",
			`{"writes":[` + updateOp + `],"actions":[{"name":"approve","writes":["save_line"],"outcome":"approve"}]}`,
			`actions[0] "approve": outcome and reason_required describe resolving the await: set resolves_await`},
		{"reason_required without resolves_await", "b", "postgres", "$PG",
			`{"writes":[` + updateOp + `],"actions":[{"name":"approve","writes":["save_line"],"reason_required":true}]}`,
			`actions[0] "approve": outcome and reason_required describe resolving the await: set resolves_await`},
		{"outcome not a label", "b", "postgres", "$PG",
			`{"actions":[{"name":"send_back","resolves_await":true,"outcome":"Send Back!"}]}`,
			`actions[0] "send_back": outcome "Send Back!" must be approve, edit, reject or a custom label (a lowercase letter, then up to 63 lowercase letters, digits or _)`},
		{"action names a write twice", "b", "postgres", "$PG",
			`{"writes":[` + updateOp + `],"actions":[{"name":"approve","writes":["save_line","save_line"]}]}`,
			`actions[0] "approve": names write "save_line" twice`},
		{"action without name", "b", "postgres", "$PG", `{"actions":[{"resolves_await":true}]}`, `actions[0]: name is required`},
		{"action feed_event not a name", "b", "postgres", "$PG", `{"actions":[{"name":"approve","resolves_await":true,"feed_event":"all done!"}]}`,
			`actions[0] "approve": feed_event "all done!" must be at most 100 letters, digits, _, . or -, starting with a letter or _`},

		// Capabilities.
		{"unknown capability", "b", "postgres", "$PG", `{"capabilities":["list_files","teleport"]}`,
			`capabilities[1] "teleport": unknown capability (known: file_preview, list_files, split_document, get_translation, document_selection, next_review_task, abort_review_task, list_citations)`},
		{"capability twice", "b", "postgres", "$PG", `{"capabilities":["document_selection","document_selection"]}`,
			`capabilities[1] "document_selection": capability is listed twice`},
		{"capabilities not names", "b", "postgres", "$PG", `{"capabilities":[{"name":"list_files"}]}`,
			`capabilities must be an array of capability names`},

		// http_calls: URL and host placeholders (docs/architecture.md#1-host-placeholders).
		{"url absent", "b", "rest", "-", oneCall(`{"op":"lookup","method":"GET"}`), `http_calls[0] "lookup": url is required`},
		{"url relative", "b", "rest", "-", oneCall(`{"op":"lookup","method":"GET","url":"/accounts"}`),
			`http_calls[0] "lookup": url "/accounts" must be an absolute http or https URL`},
		{"url not http", "b", "rest", "-", oneCall(`{"op":"lookup","method":"GET","url":"ftp://files.example.com/a"}`),
			`http_calls[0] "lookup": url "ftp://files.example.com/a" must be an absolute http or https URL`},
		{"url without host", "b", "rest", "-", oneCall(`{"op":"lookup","method":"GET","url":"https:///a"}`),
			`http_calls[0] "lookup": url "https:///a" has no host`},
		{"placeholder is the whole host", "b", "rest", "-", oneCall(`{"op":"lookup","method":"GET","url":"https://{{host}}/a"}`),
			`http_calls[0] "lookup": url "https://{{host}}/a"` + hostRule},
		{"placeholder picks the domain", "b", "rest", "-", oneCall(`{"op":"lookup","method":"GET","url":"https://{{tenant}}.com/a"}`),
			`http_calls[0] "lookup": url "https://{{tenant}}.com/a"` + hostRule},
		{"placeholder in part of a label", "b", "rest", "-", oneCall(`{"op":"lookup","method":"GET","url":"https://api-{{tenant}}.example.com/a"}`),
			`http_calls[0] "lookup": url "https://api-{{tenant}}.example.com/a" has a placeholder in part of a host label; a placeholder must be one whole DNS label (https://{{tenant}}.example.com/...)`},
		{"two placeholder labels", "b", "rest", "-", oneCall(`{"op":"lookup","method":"GET","url":"https://{{a}}.{{b}}.example.com/x"}`),
			`http_calls[0] "lookup": url "https://{{a}}.{{b}}.example.com/x" has more than one placeholder in the host; at most one DNS label may be a placeholder`},
		{"placeholder in the port", "b", "rest", "-", oneCall(`{"op":"lookup","method":"GET","url":"https://api.example.com:{{port}}/a"}`),
			`http_calls[0] "lookup": url "https://api.example.com:{{port}}/a" has a placeholder in the port; the port is literal`},
		{"placeholder in userinfo", "b", "rest", "-", oneCall(`{"op":"lookup","method":"GET","url":"https://{{user}}@api.example.com/a"}`),
			`http_calls[0] "lookup": url "https://{{user}}@api.example.com/a" carries userinfo; credentials belong in the integration, and a placeholder may not sit there`},
		{"malformed placeholder in path", "b", "rest", "-", oneCall(`{"op":"lookup","method":"GET","url":"https://api.example.com/a/{{ id }}"}`),
			`http_calls[0] "lookup": url: malformed placeholder "{{ id }}"` + badPlaceholder},
		{"placeholder starting with a digit", "b", "rest", "-", oneCall(`{"op":"lookup","method":"GET","url":"https://api.example.com/a?q={{1st}}"}`),
			`http_calls[0] "lookup": url: malformed placeholder "{{1st}}"` + badPlaceholder},
		{"unclosed placeholder", "b", "rest", "-", oneCall(`{"op":"lookup","method":"GET","url":"https://api.example.com/a/{{id"}`),
			`http_calls[0] "lookup": url: placeholder "{{id" is not closed with }}`},
		{"method unknown", "b", "rest", "-", oneCall(`{"op":"lookup","method":"FETCH","url":"https://api.example.com/a"}`),
			`http_calls[0] "lookup": method "FETCH" is not one of GET, POST, PUT, PATCH, DELETE`},
		{"method absent", "b", "rest", "-", oneCall(`{"op":"lookup","url":"https://api.example.com/a"}`),
			`http_calls[0] "lookup": method "" is not one of GET, POST, PUT, PATCH, DELETE`},

		// http_calls: auth, integration, headers and body.
		{"auth kind unknown", "b", "rest", "-", oneCall(`{"op":"lookup","method":"GET","url":"https://api.example.com/a","integration_id":"$REST","auth":{"kind":"basic"}}`),
			`http_calls[0] "lookup": auth.kind "basic" is not one of none, bearer, oauth2_password, client_credentials`},
		{"client_credentials without token_url", "b", "rest", "-",
			oneCall(`{"op":"lookup","method":"GET","url":"https://api.example.com/a","integration_id":"$REST","auth":{"kind":"client_credentials"}}`),
			`http_calls[0] "lookup": auth.token_url is required for auth.kind client_credentials`},
		{"oauth2_password token_url relative", "b", "rest", "-",
			oneCall(`{"op":"lookup","method":"GET","url":"https://api.example.com/a","integration_id":"$REST","auth":{"kind":"oauth2_password","token_url":"/token"}}`),
			`http_calls[0] "lookup": auth.token_url "/token" must be an absolute http or https URL`},
		{"token_url with a placeholder", "b", "rest", "-",
			oneCall(`{"op":"lookup","method":"GET","url":"https://api.example.com/a","integration_id":"$REST","auth":{"kind":"client_credentials","token_url":"https://{{tenant}}.login.example.com/token"}}`),
			`http_calls[0] "lookup": auth.token_url "https://{{tenant}}.login.example.com/token" may not hold placeholders`},
		{"bearer without integration", "b", "rest", "-", oneCall(`{"op":"lookup","method":"GET","url":"https://api.example.com/a","auth":{"kind":"bearer"}}`),
			`http_calls[0] "lookup": auth.kind bearer reads its secrets from an integration: integration_id is required`},
		{"http_call integration of another workspace", "b", "rest", "-",
			oneCall(`{"op":"lookup","method":"GET","url":"https://api.example.com/a","integration_id":"$FOREIGN"}`),
			`http_calls[0] "lookup": integration_id "` + f.foreign.ID + `" is not an integration of this workspace`},
		{"http_call integration unknown", "b", "postgres", "$PG",
			oneCall(`{"op":"lookup","method":"GET","url":"https://api.example.com/a","integration_id":"$NOSUCH"}`),
			`http_calls[0] "lookup": integration_id "` + noSuchIntegration + `" is not an integration of this workspace`},
		{"Host header", "b", "rest", "-", oneCall(`{"op":"lookup","method":"GET","url":"https://api.example.com/a","headers":{"Host":"evil.example.com"}}`),
			`http_calls[0] "lookup": headers: Host may not be set; the url names the host`},
		{"header name with a placeholder", "b", "rest", "-", oneCall(`{"op":"lookup","method":"GET","url":"https://api.example.com/a","headers":{"X-{{h}}":"1"}}`),
			`http_calls[0] "lookup": headers: "X-{{h}}" is not a valid header name (placeholders are allowed in values only)`},
		{"malformed placeholder in a header", "b", "rest", "-", oneCall(`{"op":"lookup","method":"GET","url":"https://api.example.com/a","headers":{"X-Account":"{{account-id}}"}}`),
			`http_calls[0] "lookup": headers "X-Account": malformed placeholder "{{account-id}}"` + badPlaceholder},
		{"malformed placeholder in the query", "b", "rest", "-", oneCall(`{"op":"lookup","method":"GET","url":"https://api.example.com/a","query":{"q":"{{}}"}}`),
			`http_calls[0] "lookup": query "q": malformed placeholder "{{}}"` + badPlaceholder},
		{"malformed placeholder in the body", "b", "rest", "-",
			oneCall(`{"op":"lookup","method":"POST","url":"https://api.example.com/a","body_template":{"customer":{"name":"{{ name}}"}}}`),
			`http_calls[0] "lookup": body_template.customer.name: malformed placeholder "{{ name}}"` + badPlaceholder},

		// Tools.
		{"tool op absent", "b", "rest", "-", oneTool(`{"tool":"translate_text"}`), `tools[0]: op is required`},
		{"tool absent", "b", "rest", "-", oneTool(`{"op":"t"}`), `tools[0] "t": tool is required: translate_text or a configured tool's display name`},
		{"tool unknown", "b", "rest", "-", oneTool(`{"op":"t","tool":"Nope"}`),
			`tools[0] "t": unknown tool "Nope": name translate_text or the display name of a configured tool in this workspace`},
		{"tool of another workspace", "b", "rest", "-", oneTool(`{"op":"t","tool":"Foreign tool"}`),
			`tools[0] "t": unknown tool "Foreign tool": name translate_text or the display name of a configured tool in this workspace`},
		{"base tool that needs configuring", "b", "rest", "-", oneTool(`{"op":"t","tool":"python_code_tool"}`),
			`tools[0] "t": tool "python_code_tool" needs configuring; name the display name of a configured python_code_tool (only translate_text is named directly)`},
		{"app tool cannot run", "b", "rest", "-", oneTool(`{"op":"t","tool":"Invoice review"}`),
			`tools[0] "t": configured tool "Invoice review" is an app_tool, which cannot be run from a bundle`},
		{"tool param twice", "b", "rest", "-", oneTool(`{"op":"t","tool":"translate_text","params":["texts","texts"]}`),
			`tools[0] "t": params: "texts" is listed twice`},

		// Reads.
		{"table unsafe", "b", "postgres", "$PG", `{"reads":[{"op":"list","table":"t; drop table x","columns":["a"]}]}`,
			`reads[0] "list": table "t; drop table x" is not a safe SQL identifier (letters, digits and _, optionally schema.table)`},
		{"table three parts", "b", "postgres", "$PG", `{"reads":[{"op":"list","table":"db.public.t","columns":["a"]}]}`,
			`reads[0] "list": table "db.public.t" is not a safe SQL identifier (letters, digits and _, optionally schema.table)`},
		{"table absent", "b", "postgres", "$PG", `{"reads":[{"op":"list","columns":["a"]}]}`, `reads[0] "list": table is required`},
		// Issue 23 HIGH 1: bindings read pg_catalog.pg_authid and wrote
		// pg_catalog.pg_db_role_setting. System schemas are refused in any
		// case; a quoted name is no safe identifier at all.
		{"table in pg_catalog", "b", "postgres", "$PG", `{"reads":[{"op":"list","table":"pg_catalog.pg_authid","columns":["rolname"]}]}`,
			`reads[0] "list": table "pg_catalog.pg_authid" is in pg_catalog, a system schema: a binding names the customer's own tables`},
		{"write in pg_catalog", "b", "postgres", "$PG", `{"writes":[{"op":"w","table":"PG_CATALOG.pg_db_role_setting","mode":"insert","columns":["setconfig"]}]}`,
			`writes[0] "w": table "PG_CATALOG.pg_db_role_setting" is in PG_CATALOG, a system schema: a binding names the customer's own tables`},
		{"table in information_schema", "b", "postgres", "$PG", `{"reads":[{"op":"list","table":"Information_Schema.tables","columns":["table_name"]}]}`,
			`reads[0] "list": table "Information_Schema.tables" is in Information_Schema, a system schema: a binding names the customer's own tables`},
		{"table in pg_toast", "b", "postgres", "$PG", `{"reads":[{"op":"list","table":"pg_toast.pg_toast_1262","columns":["chunk_id"]}]}`, `reads[0] "list": table "pg_toast.pg_toast_1262" is in pg_toast, a system schema: a binding names the customer's own tables`},
		{"table in pg_temp", "b", "postgres", "$PG", `{"reads":[{"op":"list","table":"pg_temp_3.t","columns":["a"]}]}`, `reads[0] "list": table "pg_temp_3.t" is in pg_temp_3, a system schema: a binding names the customer's own tables`},
		{"table in sys", "b", "postgres", "$PG", `{"reads":[{"op":"list","table":"SYS.sql_logins","columns":["name"]}]}`, `reads[0] "list": table "SYS.sql_logins" is in SYS, a system schema: a binding names the customer's own tables`},
		{"table in INFORMATION_SCHEMA", "b", "postgres", "$PG", `{"reads":[{"op":"list","table":"INFORMATION_SCHEMA.COLUMNS","columns":["a"]}]}`, `reads[0] "list": table "INFORMATION_SCHEMA.COLUMNS" is in INFORMATION_SCHEMA, a system schema: a binding names the customer's own tables`},
		{"unqualified catalog", "b", "postgres", "$PG", `{"reads":[{"op":"list","table":"pg_authid","columns":["rolname"]}]}`,
			`reads[0] "list": table "pg_authid" names a system catalog (Postgres looks a pg_ name up in pg_catalog first): qualify a table of the customer's own with its schema`},
		{"quoted system schema", "b", "postgres", "$PG", `{"reads":[{"op":"list","table":"\"pg_catalog\".\"pg_authid\"","columns":["rolname"]}]}`,
			`reads[0] "list": table "\"pg_catalog\".\"pg_authid\"" is not a safe SQL identifier (letters, digits and _, optionally schema.table)`},
		{"read without columns", "b", "postgres", "$PG", `{"reads":[{"op":"list","table":"t"}]}`,
			`reads[0] "list": columns must list at least one selectable column`},
		{"column unsafe", "b", "postgres", "$PG", `{"reads":[{"op":"list","table":"t","columns":["a","b\"c"]}]}`,
			`reads[0] "list": columns: column "b\"c" is not a safe SQL identifier (letters, digits and _, at most 63)`},
		{"column twice", "b", "postgres", "$PG", `{"reads":[{"op":"list","table":"t","columns":["a","a"]}]}`,
			`reads[0] "list": columns: column "a" is listed twice`},
		{"filterable not declared", "b", "postgres", "$PG", `{"reads":[{"op":"list","table":"t","columns":["a"],"filterable":["secret"]}]}`,
			`reads[0] "list": filterable column "secret" is not among the read's columns`},
		{"order_by not declared", "b", "postgres", "$PG", `{"reads":[{"op":"list","table":"t","columns":["a"],"order_by":[{"column":"secret","desc":true}]}]}`,
			`reads[0] "list": order_by column "secret" is not among the read's columns`},
		{"limit too large", "b", "postgres", "$PG", `{"reads":[{"op":"list","table":"t","columns":["a"],"limit":1001}]}`,
			`reads[0] "list": limit 1001 is out of range 0..1000 (0 means 100)`},
		{"limit negative", "b", "postgres", "$PG", `{"reads":[{"op":"list","table":"t","columns":["a"],"limit":-1}]}`,
			`reads[0] "list": limit -1 is out of range 0..1000 (0 means 100)`},
		{"fixed filter key unsafe", "b", "postgres", "$PG", `{"reads":[{"op":"list","table":"t","columns":["a"],"fixed_filters":{"a b":1}}]}`,
			`reads[0] "list": fixed_filters: key "a b" is not a safe SQL identifier`},
		{"fixed filter from the request", "b", "postgres", "$PG", `{"reads":[{"op":"list","table":"t","columns":["a"],"fixed_filters":{"owner":"{{user_id}}"}}]}`,
			`reads[0] "list": fixed_filters "owner": {{user_id}} is not a session placeholder; only {{task_id}}, {{agent_id}}, {{step_id}}, {{workspace_id}} may be used`},
		{"fixed filter object", "b", "postgres", "$PG", `{"reads":[{"op":"list","table":"t","columns":["a"],"fixed_filters":{"owner":{"in":[1]}}}]}`,
			`reads[0] "list": fixed_filters "owner" must be a string, number, boolean or null`},

		// Writes.
		{"mode absent", "b", "postgres", "$PG", `{"writes":[{"op":"save","table":"t","columns":["a"]}]}`,
			`writes[0] "save": mode is required: insert, update or upsert`},
		{"mode unknown", "b", "postgres", "$PG", `{"writes":[{"op":"save","table":"t","mode":"merge","columns":["a"]}]}`,
			`writes[0] "save": mode "merge" is not one of insert, update, upsert`},
		{"update without key_columns", "b", "postgres", "$PG", `{"writes":[{"op":"ok","table":"t","mode":"insert","columns":["a"]},{"op":"save_line","table":"lines","mode":"update","columns":["qty"]}]}`,
			`writes[1] "save_line": key_columns is required for mode update`},
		{"upsert without key_columns", "b", "postgres", "$PG", `{"writes":[{"op":"save","table":"t","mode":"upsert","columns":["a"]}]}`,
			`writes[0] "save": key_columns is required for mode upsert`},
		{"key column unsafe", "b", "postgres", "$PG", `{"writes":[{"op":"save","table":"t","mode":"update","key_columns":["id;"],"columns":["a"]}]}`,
			`writes[0] "save": key_columns: column "id;" is not a safe SQL identifier (letters, digits and _, at most 63)`},
		{"write without columns", "b", "postgres", "$PG", `{"writes":[{"op":"save","table":"t","mode":"insert","columns":[]}]}`,
			`writes[0] "save": columns must list at least one writable column`},
		{"write column twice", "b", "postgres", "$PG", `{"writes":[{"op":"save","table":"t","mode":"insert","columns":["a","b","a"]}]}`,
			`writes[0] "save": columns: column "a" is listed twice`},
		{"write table unsafe", "b", "postgres", "$PG", `{"writes":[{"op":"save","table":"1t","mode":"insert","columns":["a"]}]}`,
			`writes[0] "save": table "1t" is not a safe SQL identifier (letters, digits and _, optionally schema.table)`},
		{"fixed value also writable", "b", "postgres", "$PG", `{"writes":[{"op":"save","table":"t","mode":"insert","columns":["status"],"fixed_values":{"status":"approved"}}]}`,
			`writes[0] "save": column "status" is both writable and in fixed_values; a fixed value cannot be set by a request`},
		{"fixed value from the request", "b", "postgres", "$PG", `{"writes":[{"op":"save","table":"t","mode":"insert","columns":["a"],"fixed_values":{"task_id":"{{task_id}}","who":"{{reviewer}}"}}]}`,
			`writes[0] "save": fixed_values "who": {{reviewer}} is not a session placeholder; only {{task_id}}, {{agent_id}}, {{step_id}}, {{workspace_id}} may be used`},
		{"update overwriting a row's task_id", "b", "postgres", "$PG", `{"writes":[{"op":"reassign","table":"decisions","mode":"update","key_columns":["id"],"columns":["decision"],"fixed_values":{"task_id":"{{task_id}}"}}]}`,
			`writes[0] "reassign": fixed_values column "task_id" must also be one of key_columns in mode update: a fixed value scopes the row an update may change, it may not overwrite the row a request names`},
	}
	for _, tc := range cases {
		t.Run(tc.label, func(t *testing.T) {
			code, msg := f.refusal(t, f.input(tc.name, tc.kind, tc.integration, tc.ops))
			require.Equal(t, apperr.Invalid, code, msg)
			require.Equal(t, tc.want, msg)
		})
	}
	// A stored setting listed in params is a 403 at save, as /run answers it.
	for _, tc := range []struct{ label, ops, want string }{
		{"csv op lists file_name", oneTool(`{"op":"t","tool":"CSV lookup","params":["match_criteria","file_name"]}`),
			`tools[0] "t": params may not list "file_name" for csv_lookup_tool: it is a stored setting of the configured tool (configured tool "CSV lookup")`},
		{"postgres query op lists query", oneTool(`{"op":"t","tool":"Query orders","params":["query"]}`),
			`tools[0] "t": params may not list "query" for postgres_execute_query: it is a stored setting of the configured tool (configured tool "Query orders")`},
		{"mssql query op lists query", oneTool(`{"op":"t","tool":"Query ledger","params":["query","limit"]}`),
			`tools[0] "t": params may not list "query" for mssql_execute_query: it is a stored setting of the configured tool (configured tool "Query ledger")`},
		{"extraction op lists instructions", oneTool(`{"op":"t","tool":"Parse again","params":["file_url","instructions"]}`),
			`tools[0] "t": params may not list "instructions" for structured_data_extraction: only file_url and sheets come from the bundle (configured tool "Parse again")`},
		{"every tool of a shared display name is checked", oneTool(`{"op":"t","tool":"Find vendor","params":["file_name"]}`),
			`tools[0] "t": params may not list "file_name" for csv_lookup_tool: it is a stored setting of the configured tool (configured tool "Find vendor")`},
	} {
		t.Run(tc.label, func(t *testing.T) {
			code, msg := f.refusal(t, f.input("b", "rest", "-", tc.ops))
			require.Equal(t, apperr.Forbidden, code, msg)
			require.Equal(t, tc.want, msg)
		})
	}
}
