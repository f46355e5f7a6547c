package api_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/appruntime/appruntime/internal/apperr"
	"github.com/appruntime/appruntime/internal/testkit"
	"github.com/appruntime/appruntime/models"
)

// bindingFixture is a tenant with the integrations and configured tools a
// binding may name, plus another workspace's, created directly in the store.
type bindingFixture struct {
	tn      testkit.Tenant
	pg      models.Integration // postgres data source of the tenant
	rest    models.Integration // REST upstream of the tenant
	foreign models.Integration // another workspace's postgres data source
}

func newBindingFixture(t *testing.T, a *testAPI) bindingFixture {
	t.Helper()
	bt := testkit.NewBindingTargets(t, a.Store.DB)
	return bindingFixture{tn: bt.Tenant, pg: bt.PG, rest: bt.REST, foreign: bt.Foreign}
}

// bindingBody builds a request body; "-" leaves a field out, and $PG, $REST,
// $FOREIGN and $NOSUCH in ops stand for integration ids.
func (f bindingFixture) bindingBody(name, kind, integration, ops string) map[string]any {
	r := strings.NewReplacer("$PG", f.pg.ID, "$REST", f.rest.ID, "$FOREIGN", f.foreign.ID, "$NOSUCH", noSuchIntegration)
	body := map[string]any{}
	if name != "-" {
		body["name"] = name
	}
	if kind != "-" {
		body["binding_kind"] = kind
	}
	if integration != "-" {
		body["integration_id"] = r.Replace(integration)
	}
	if ops != "-" {
		body["allowed_operations"] = json.RawMessage(r.Replace(ops))
	}
	return body
}

const noSuchIntegration = "01890000-0000-7000-8000-000000000000"

const (
	readOp  = `{"op":"list","table":"lines","columns":["id","sku","qty"]}`
	writeOp = `{"op":"save_line","table":"lines","mode":"update","key_columns":["id"],"columns":["qty"]}`
)

// call builds an http_calls document around one call.
func oneCall(call string) string { return `{"http_calls":[` + call + `]}` }

// oneTool builds a tools document around one tool op.
func oneTool(tool string) string { return `{"tools":[` + tool + `]}` }

// TestAdminBindingRefusals is one refusal per status code over HTTP; every
// rule and its message is tested where it lives
// (internal/binding.TestValidateRefusals).
func TestAdminBindingRefusals(t *testing.T) {
	t.Parallel()
	a := newTestAPI(t)
	f := newBindingFixture(t, a)
	// Registered before the subtests, so it runs after every one of them.
	t.Cleanup(func() {
		var n int64
		require.NoError(t, a.Store.DB.Model(&models.Binding{}).Where("workspace_id = ?", f.tn.Workspace.ID).Count(&n).Error)
		require.Zero(t, n, "a refused binding was saved")
	})
	for _, tc := range []struct {
		label, kind, integration, ops string
		status                        int
		want                          string
	}{
		{"a rule of the document is 400", "postgres", "$PG", `{"reads":[{"op":"list","table":"t","columns":["a"],"limit":1001}]}`,
			400, `reads[0] "list": limit 1001 is out of range 0..1000 (0 means 100)`},
		{"another workspace's integration is 400", "postgres", "$FOREIGN", `{"reads":[` + readOp + `]}`,
			400, `integration_id "` + f.foreign.ID + `" is not an integration of this workspace`},
		{"a stored setting in params is 403", "rest", "-", oneTool(`{"op":"t","tool":"CSV lookup","params":["match_criteria","file_name"]}`),
			403, `tools[0] "t": params may not list "file_name" for csv_lookup_tool: it is a stored setting of the configured tool (configured tool "CSV lookup")`},
	} {
		t.Run(tc.label, func(t *testing.T) {
			t.Parallel()
			r := a.call(t, "POST", "/api/admin/bindings", f.tn.AdminToken, f.bindingBody("b", tc.kind, tc.integration, tc.ops))
			require.Equal(t, tc.status, r.Status, "body: %s", r.Raw)
			require.Equal(t, tc.want, r.Body["error"])
		})
	}
}

// richOps is a binding that uses every accepted form: schema-qualified
// tables, session placeholders in fixed values, a placeholder label in an
// http_call's host, a lower-case method, every kind of tool op.
const richOps = `{
 "reads":[{"op":"list_lines","table":"public.invoice_lines","columns":["id","sku","qty"],"filterable":["sku"],
   "order_by":[{"column":"id","desc":true}],"limit":50,"fixed_filters":{"task_id":"{{task_id}}","active":true,"tenant_no":7}}],
 "writes":[{"op":"save_line","table":"invoice_lines","mode":"update","key_columns":["id"],"columns":["qty"]},
   {"op":"record_decision","table":"decisions","mode":"insert","columns":["decision"],
    "fixed_values":{"task_id":"{{task_id}}","source":"bundle {{step_id}}"}}],
 "http_calls":[{"op":"lookup_account","method":"post","url":"https://{{tenant}}.crm.example.com/accounts/{{account}}?q={{q}}",
   "integration_id":"$REST","auth":{"kind":"client_credentials","token_url":"https://login.example.com/oauth2/token","scope":"crm.read"},
   "headers":{"X-Account":"{{account}}"},"query":{"limit":"10"},"body_template":{"name":"{{name}}","tags":["{{tag}}"]},
   "prune_empty_body_fields":true},
  {"op":"export","method":"PUT","url":"https://api.{{region}}.example.com:8443/export"}],
 "actions":[{"name":"approve","writes":["save_line","record_decision"],"http_calls":["export"],"feed_event":"invoice_approved","resolves_await":true},
   {"name":"release","resolves_await":true}],
 "tools":[{"op":"translate","tool":"translate_text","params":["texts","target_language"],"record":false},
   {"op":"revalidate","tool":"Revalidate PO","params":["edits"]},
   {"op":"find_vendor","tool":"Find vendor","params":["match_criteria","return_columns"]},
   {"op":"reparse","tool":"Parse again","params":["file_url","sheets"]},
   {"op":"orders","tool":"Query orders","params":["customer"]}],
 "capabilities":["document_selection","list_files"]
}`

// adminTokenID returns the id of the tenant's admin token, the actor its
// saves are recorded under.
func adminTokenID(t *testing.T, a *testAPI, f bindingFixture) string {
	t.Helper()
	var tok models.APIToken
	require.NoError(t, a.Store.DB.Where("workspace_id = ? AND scope = ?", f.tn.Workspace.ID, models.ScopeAdmin).Take(&tok).Error)
	return tok.ID
}

func auditActions(t *testing.T, a *testAPI, bindingID string) []string {
	t.Helper()
	var actions []string
	require.NoError(t, a.Store.DB.Model(&models.AuditEntry{}).Where("target_type = ? AND target_id = ?", "binding", bindingID).
		Order("created_at, id").Pluck("action", &actions).Error)
	return actions
}

func TestAdminBindingLifecycle(t *testing.T) {
	t.Parallel()
	a := newTestAPI(t)
	f := newBindingFixture(t, a)
	tok := f.tn.AdminToken

	r := a.call(t, "POST", "/api/admin/bindings", tok, f.bindingBody("Invoice lines", "postgres", "$PG", richOps))
	require.Equal(t, 201, r.Status, "%s", r.Raw)
	id, _ := r.Body["id"].(string)
	require.True(t, models.IsID(id))
	require.Equal(t, "Invoice lines", r.Body["name"])
	require.Equal(t, "postgres", r.Body["binding_kind"])
	require.Equal(t, f.pg.ID, r.Body["integration_id"])
	require.EqualValues(t, 1, r.Body["version"])
	require.NotEmpty(t, r.Body["created_at"])
	require.NotEmpty(t, r.Body["updated_at"])
	require.NotContains(t, r.Body, "workspace_id")
	ops := r.Body["allowed_operations"].(map[string]any)
	call := ops["http_calls"].([]any)[0].(map[string]any)
	require.Equal(t, "POST", call["method"], "the method is stored upper-case")
	require.Len(t, ops["tools"], 5)

	t.Run("tokens", func(t *testing.T) {
		require.Equal(t, 401, a.call(t, "GET", "/api/admin/bindings", "", nil).Status)
		require.Equal(t, 401, a.call(t, "GET", "/api/admin/bindings", f.tn.HostToken, nil).Status)
		require.Equal(t, 401, a.call(t, "POST", "/api/admin/bindings", f.tn.AgentToken, f.bindingBody("x", "rest", "-", `{}`)).Status)
		other := testkit.NewTenant(t, a.Store.DB).AdminToken
		for _, c := range []struct{ method, path string }{
			{"GET", "/api/admin/bindings/" + id}, {"PATCH", "/api/admin/bindings/" + id}, {"PUT", "/api/admin/bindings/" + id},
			{"DELETE", "/api/admin/bindings/" + id}, {"GET", "/api/admin/bindings/" + id + "/versions"},
			{"POST", "/api/admin/bindings/" + id + "/versions/1/restore"},
		} {
			r := a.call(t, c.method, c.path, other, map[string]any{"name": "stolen"})
			require.Equal(t, 404, r.Status, "%s %s: %s", c.method, c.path, r.Raw)
			require.Equal(t, "binding "+id+" not found", r.Body["error"])
		}
		r := a.call(t, "GET", "/api/admin/bindings", other, nil)
		require.Equal(t, 200, r.Status)
		require.Empty(t, r.Body["bindings"])
	})

	r = a.call(t, "GET", "/api/admin/bindings/"+id, tok, nil)
	require.Equal(t, 200, r.Status)
	require.Equal(t, "Invoice lines", r.Body["name"])
	require.Equal(t, 404, a.call(t, "GET", "/api/admin/bindings/not-an-id", tok, nil).Status)

	// A second binding, to see the list ordered by name.
	r = a.call(t, "POST", "/api/admin/bindings", tok, f.bindingBody("CRM lookups", "rest", "$REST",
		oneCall(`{"op":"lookup","method":"GET","url":"https://crm.example.com/a"}`)))
	require.Equal(t, 201, r.Status, "%s", r.Raw)
	require.Equal(t, f.rest.ID, r.Body["integration_id"])
	r = a.call(t, "GET", "/api/admin/bindings", tok, nil)
	require.Equal(t, 200, r.Status)
	list := r.Body["bindings"].([]any)
	require.Len(t, list, 2)
	require.Equal(t, "CRM lookups", list[0].(map[string]any)["name"])
	require.Equal(t, "Invoice lines", list[1].(map[string]any)["name"])

	// PATCH changes only what it names.
	r = a.call(t, "PATCH", "/api/admin/bindings/"+id, tok, map[string]any{"name": "Invoice lines v2", "version": 1})
	require.Equal(t, 200, r.Status, "%s", r.Raw)
	require.EqualValues(t, 2, r.Body["version"])
	require.Equal(t, "Invoice lines v2", r.Body["name"])
	require.Equal(t, f.pg.ID, r.Body["integration_id"])
	require.Len(t, r.Body["allowed_operations"].(map[string]any)["tools"], 5)

	// An edit of an older version is refused rather than lost.
	r = a.call(t, "PATCH", "/api/admin/bindings/"+id, tok, map[string]any{"name": "stale", "version": 1})
	require.Equal(t, 409, r.Status)
	require.Equal(t, "binding "+id+" is at version 2, not 1: reload it and apply your change again", r.Body["error"])

	// A whole replacement needs every field; a fetched binding can be sent back.
	r = a.call(t, "PUT", "/api/admin/bindings/"+id, tok, map[string]any{"name": "x", "binding_kind": "rest"})
	require.Equal(t, 400, r.Status)
	require.Equal(t, `allowed_operations is required: an object such as {"reads": [...], "writes": [...]}`, r.Body["error"])
	got := a.call(t, "GET", "/api/admin/bindings/"+id, tok, nil)
	got.Body["name"] = "Invoice lines v3"
	r = a.call(t, "PUT", "/api/admin/bindings/"+id, tok, got.Body)
	require.Equal(t, 200, r.Status, "%s", r.Raw)
	require.EqualValues(t, 3, r.Body["version"])
	require.Equal(t, got.Body["allowed_operations"], r.Body["allowed_operations"])
	got.Body["id"] = models.NewID()
	r = a.call(t, "PUT", "/api/admin/bindings/"+id, tok, got.Body)
	require.Equal(t, 400, r.Status)
	require.Contains(t, r.Body["error"], "does not match the binding "+id+" in the path")

	// Clearing the data source of a postgres binding is refused.
	r = a.call(t, "PATCH", "/api/admin/bindings/"+id, tok, map[string]any{"integration_id": nil})
	require.Equal(t, 400, r.Status)
	require.Equal(t, "integration_id is required: a postgres binding reads and writes through a postgres (or dev-only sqlite) data-source integration", r.Body["error"])
	r = a.call(t, "PATCH", "/api/admin/bindings/"+id, tok, map[string]any{"nmae": "typo"})
	require.Equal(t, 400, r.Status)
	require.Equal(t, `bad request body: unknown field "nmae"`, r.Body["error"])
	r = a.call(t, "PATCH", "/api/admin/bindings/"+id, tok, `[1]`)
	require.Equal(t, 400, r.Status)

	// A binding in use cannot be deleted.
	tool := models.ConfiguredTool{ID: models.NewID(), WorkspaceID: f.tn.Workspace.ID, AgentID: f.tn.Agent.ID,
		DisplayName: "Review lines", BaseTool: models.BaseAppTool, BindingID: &id}
	require.NoError(t, a.Store.DB.Create(&tool).Error)
	r = a.call(t, "DELETE", "/api/admin/bindings/"+id, tok, nil)
	require.Equal(t, 409, r.Status)
	require.Equal(t, `binding `+id+` is used by configured tool(s) "Review lines": point them at another binding first`, r.Body["error"])
	require.NoError(t, a.Store.DB.Delete(&tool).Error)
	r = a.call(t, "DELETE", "/api/admin/bindings/"+id, tok, nil)
	require.Equal(t, 204, r.Status, "%s", r.Raw)
	require.Equal(t, 404, a.call(t, "GET", "/api/admin/bindings/"+id, tok, nil).Status)
	var versions int64
	require.NoError(t, a.Store.DB.Model(&models.BindingVersion{}).Where("binding_id = ?", id).Count(&versions).Error)
	require.Zero(t, versions, "the history goes with the binding")

	require.Equal(t, []string{"binding.create", "binding.update", "binding.update", "binding.delete"}, auditActions(t, a, id))
}

func TestAdminBindingVersionsAndRestore(t *testing.T) {
	t.Parallel()
	a := newTestAPI(t)
	f := newBindingFixture(t, a)
	tok := f.tn.AdminToken
	actor := "token:" + adminTokenID(t, a, f)

	v1ops := `{"writes":[{"op":"save_line","table":"lines","mode":"update","key_columns":["id"],"columns":["qty"]}],
		"http_calls":[{"op":"lookup","method":"GET","url":"https://crm.example.com/a/{{id}}","integration_id":"$REST"}]}`
	r := a.call(t, "POST", "/api/admin/bindings", tok, f.bindingBody("Lines", "postgres", "$PG", v1ops))
	require.Equal(t, 201, r.Status, "%s", r.Raw)
	id := r.Body["id"].(string)
	v1 := r.Body["allowed_operations"]

	v2ops := `{"writes":[{"op":"save_line","table":"lines","mode":"update","key_columns":["id"],"columns":["qty","price"]}],
		"capabilities":["document_selection"]}`
	r = a.call(t, "PATCH", "/api/admin/bindings/"+id, tok, f.bindingBody("-", "-", "-", v2ops))
	require.Equal(t, 200, r.Status, "%s", r.Raw)
	require.EqualValues(t, 2, r.Body["version"])

	r = a.call(t, "GET", "/api/admin/bindings/"+id+"/versions", tok, nil)
	require.Equal(t, 200, r.Status, "%s", r.Raw)
	versions := r.Body["versions"].([]any)
	require.Len(t, versions, 2)
	latest, first := versions[0].(map[string]any), versions[1].(map[string]any)
	require.EqualValues(t, 2, latest["version"])
	require.EqualValues(t, 1, first["version"])
	require.Equal(t, actor, latest["saved_by"])
	require.Equal(t, actor, first["saved_by"])
	require.NotEmpty(t, latest["created_at"])
	require.NotContains(t, latest, "restored_from")
	require.Equal(t, v1, first["allowed_operations"], "a version keeps its full content")

	lookup := map[string]any{"op": "lookup", "method": "GET", "url": "https://crm.example.com/a/{{id}}", "integration_id": f.rest.ID}
	require.ElementsMatch(t, []any{
		map[string]any{"path": "writes.save_line.columns", "before": []any{"qty"}, "after": []any{"qty", "price"}},
		map[string]any{"path": "http_calls.lookup", "before": lookup},
		map[string]any{"path": "capabilities", "after": []any{"document_selection"}},
	}, latest["diff"])
	require.ElementsMatch(t, []any{
		map[string]any{"path": "name", "after": "Lines"},
		map[string]any{"path": "binding_kind", "after": "postgres"},
		map[string]any{"path": "integration_id", "after": f.pg.ID},
		map[string]any{"path": "writes.save_line", "after": map[string]any{
			"op": "save_line", "table": "lines", "mode": "update", "key_columns": []any{"id"}, "columns": []any{"qty"}}},
		map[string]any{"path": "http_calls.lookup", "after": lookup},
	}, first["diff"])

	// Restoring version 1 is a new save with version 1's content.
	r = a.call(t, "POST", "/api/admin/bindings/"+id+"/versions/1/restore", tok, nil)
	require.Equal(t, 200, r.Status, "%s", r.Raw)
	require.EqualValues(t, 3, r.Body["version"])
	require.Equal(t, v1, r.Body["allowed_operations"])
	r = a.call(t, "GET", "/api/admin/bindings/"+id+"/versions", tok, nil)
	versions = r.Body["versions"].([]any)
	require.Len(t, versions, 3)
	restored := versions[0].(map[string]any)
	require.EqualValues(t, 3, restored["version"])
	require.EqualValues(t, 1, restored["restored_from"])
	require.Equal(t, actor, restored["saved_by"])
	require.ElementsMatch(t, []any{
		map[string]any{"path": "writes.save_line.columns", "before": []any{"qty", "price"}, "after": []any{"qty"}},
		map[string]any{"path": "http_calls.lookup", "after": lookup},
		map[string]any{"path": "capabilities", "before": []any{"document_selection"}},
	}, restored["diff"])

	// A restore is validated again: version 1 names an integration since deleted.
	require.NoError(t, a.Store.DB.Delete(&models.Integration{}, "id = ?", f.rest.ID).Error)
	r = a.call(t, "POST", "/api/admin/bindings/"+id+"/versions/1/restore", tok, nil)
	require.Equal(t, 400, r.Status)
	require.Equal(t, `http_calls[0] "lookup": integration_id "`+f.rest.ID+`" is not an integration of this workspace`, r.Body["error"])
	r = a.call(t, "POST", "/api/admin/bindings/"+id+"/versions/2/restore", tok, nil)
	require.Equal(t, 200, r.Status, "%s", r.Raw)
	require.EqualValues(t, 4, r.Body["version"])

	r = a.call(t, "POST", "/api/admin/bindings/"+id+"/versions/9/restore", tok, nil)
	require.Equal(t, 404, r.Status)
	require.Equal(t, "version 9 of binding "+id+" not found", r.Body["error"])
	r = a.call(t, "POST", "/api/admin/bindings/"+id+"/versions/latest/restore", tok, nil)
	require.Equal(t, 400, r.Status)
	require.Equal(t, `version "latest" is not a version number`, r.Body["error"])

	require.Equal(t, []string{"binding.create", "binding.update", "binding.restore", "binding.restore"}, auditActions(t, a, id))
	var entry models.AuditEntry
	require.NoError(t, a.Store.DB.Where("target_id = ? AND action = ?", id, "binding.restore").Order("created_at").Take(&entry).Error)
	require.Equal(t, actor, entry.Actor)
	var detail map[string]any
	require.NoError(t, entry.Detail.Decode(&detail))
	require.EqualValues(t, 1, detail["restored_from"])
	require.EqualValues(t, 3, detail["version"])
}

// TestBindingSaveIsSeenByOtherReplica runs two API instances on one database
// and one Redis: a save through either is what the other's Lookup returns on
// its very next call.
func TestBindingSaveIsSeenByOtherReplica(t *testing.T) {
	t.Parallel()
	st, rd := testkit.Schema(t), testkit.Redis(t)
	one, two := newTestAPIOn(t, st, rd), newTestAPIOn(t, st, rd)
	f := newBindingFixture(t, one)
	ctx := context.Background()

	r := one.call(t, "POST", "/api/admin/bindings", f.tn.AdminToken, f.bindingBody("Lines", "postgres", "$PG", `{"writes":[`+writeOp+`]}`))
	require.Equal(t, 201, r.Status, "%s", r.Raw)
	id := r.Body["id"].(string)

	l, err := two.P.Bindings.Lookup(ctx, id)
	require.NoError(t, err)
	require.Equal(t, 1, l.Version)
	require.Equal(t, f.tn.Workspace.ID, l.WorkspaceID)
	again, err := two.P.Bindings.Lookup(ctx, id)
	require.NoError(t, err)
	require.Same(t, l, again, "an unchanged binding is served from the cache")
	_, ok := l.Write("save_header")
	require.False(t, ok)

	r = one.call(t, "PATCH", "/api/admin/bindings/"+id, f.tn.AdminToken, f.bindingBody("-", "-", "-",
		`{"writes":[`+writeOp+`,{"op":"save_header","table":"headers","mode":"update","key_columns":["id"],"columns":["vendor"]}]}`))
	require.Equal(t, 200, r.Status, "%s", r.Raw)
	l, err = two.P.Bindings.Lookup(ctx, id)
	require.NoError(t, err)
	require.Equal(t, 2, l.Version)
	_, ok = l.Write("save_header")
	require.True(t, ok, "the other replica serves the saved binding on its next call")

	// And the other way round, with the first replica holding a cached copy.
	l, err = one.P.Bindings.Lookup(ctx, id)
	require.NoError(t, err)
	require.Equal(t, 2, l.Version)
	r = two.call(t, "PATCH", "/api/admin/bindings/"+id, f.tn.AdminToken, map[string]any{"allowed_operations": json.RawMessage(`{"writes":[` + writeOp + `]}`)})
	require.Equal(t, 200, r.Status, "%s", r.Raw)
	l, err = one.P.Bindings.Lookup(ctx, id)
	require.NoError(t, err)
	require.Equal(t, 3, l.Version)
	_, ok = l.Write("save_header")
	require.False(t, ok)

	r = one.call(t, "DELETE", "/api/admin/bindings/"+id, f.tn.AdminToken, nil)
	require.Equal(t, 204, r.Status, "%s", r.Raw)
	_, err = two.P.Bindings.Lookup(ctx, id)
	require.True(t, apperr.Is(err, apperr.NotFound), "a deleted binding is gone on the next call: %v", err)
}
