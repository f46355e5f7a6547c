package api_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/appruntime/appruntime/internal/testkit"
	"github.com/appruntime/appruntime/models"
)

// toolFixture is a tenant with what configured tools point at.
type toolFixture struct {
	Tenant      testkit.Tenant
	Bundle      models.Bundle
	Binding     models.Binding
	Postgres    models.Integration
	MSSQL       models.Integration
	REST        models.Integration
	Python      models.ConfiguredTool
	CSV         models.ConfiguredTool
	OtherAgent  models.Agent
	OtherPython models.ConfiguredTool // a python tool of OtherAgent
	Foreign     testkit.Tenant        // another workspace
	ForeignIDs  map[string]string     // its bundle, binding, integration
}

func newToolFixture(t *testing.T, a *testAPI) toolFixture {
	t.Helper()
	db := a.Store.DB
	f := toolFixture{Tenant: testkit.NewTenant(t, db), Foreign: testkit.NewTenant(t, db), ForeignIDs: map[string]string{}}
	ws := f.Tenant.Workspace.ID
	f.Bundle = models.Bundle{ID: models.NewID(), Version: 1, WorkspaceID: ws, Name: "b", SHA256: "aa", ContentType: "text/html", Size: 1, StorageKey: "k"}
	require.NoError(t, db.Create(&f.Bundle).Error)
	f.Binding = models.Binding{ID: models.NewID(), WorkspaceID: ws, Name: "b", BindingKind: "rest", AllowedOperations: models.JSON(`{}`), Version: 1}
	require.NoError(t, db.Create(&f.Binding).Error)
	f.Postgres = models.Integration{ID: models.NewID(), WorkspaceID: ws, Name: "pg", Kind: "postgres"}
	f.MSSQL = models.Integration{ID: models.NewID(), WorkspaceID: ws, Name: "ms", Kind: "mssql"}
	f.REST = models.Integration{ID: models.NewID(), WorkspaceID: ws, Name: "crm", Kind: "rest", BaseURL: "https://crm.example.com"}
	for _, i := range []*models.Integration{&f.Postgres, &f.MSSQL, &f.REST} {
		require.NoError(t, db.Create(i).Error)
	}
	f.OtherAgent = models.Agent{ID: models.NewID(), WorkspaceID: ws, Name: "second agent"}
	require.NoError(t, db.Create(&f.OtherAgent).Error)
	f.Python = models.ConfiguredTool{ID: models.NewID(), WorkspaceID: ws, AgentID: f.Tenant.Agent.ID, DisplayName: "Seed rows",
		BaseTool: models.BasePythonCode, Config: models.JSON(`{"code":"print(1)"}`)}
	f.OtherPython = models.ConfiguredTool{ID: models.NewID(), WorkspaceID: ws, AgentID: f.OtherAgent.ID, DisplayName: "Other seed",
		BaseTool: models.BasePythonCode, Config: models.JSON(`{"code":"print(2)"}`)}
	f.CSV = models.ConfiguredTool{ID: models.NewID(), WorkspaceID: ws, AgentID: f.Tenant.Agent.ID, DisplayName: "Vendors",
		BaseTool: models.BaseCSVLookup, Config: models.JSON(`{"file_name":"v.csv"}`)}
	require.NoError(t, db.Create(&f.Python).Error)
	require.NoError(t, db.Create(&f.CSV).Error)
	require.NoError(t, db.Create(&f.OtherPython).Error)

	fws := f.Foreign.Workspace.ID
	fb := models.Bundle{ID: models.NewID(), Version: 1, WorkspaceID: fws, Name: "b", SHA256: "aa", ContentType: "text/html", Size: 1, StorageKey: "k2"}
	fbind := models.Binding{ID: models.NewID(), WorkspaceID: fws, Name: "b", BindingKind: "rest", AllowedOperations: models.JSON(`{}`), Version: 1}
	fint := models.Integration{ID: models.NewID(), WorkspaceID: fws, Name: "pg", Kind: "postgres"}
	require.NoError(t, db.Create(&fb).Error)
	require.NoError(t, db.Create(&fbind).Error)
	require.NoError(t, db.Create(&fint).Error)
	f.ForeignIDs["bundle"], f.ForeignIDs["binding"], f.ForeignIDs["integration"] = fb.ID, fbind.ID, fint.ID
	return f
}

// appTool returns a valid app tool body with the given fields replaced (a nil value removes one).
func (f toolFixture) appTool(overrides map[string]any) map[string]any {
	body := map[string]any{
		"agent_id": f.Tenant.Agent.ID, "display_name": "Invoice review", "base_tool": "app_tool",
		"bundle_id": f.Bundle.ID, "binding_id": f.Binding.ID,
	}
	for k, v := range overrides {
		if v == nil {
			delete(body, k)
			continue
		}
		body[k] = v
	}
	return body
}

// tool returns a body for another base tool.
func (f toolFixture) tool(base string, config map[string]any, extra map[string]any) map[string]any {
	body := map[string]any{"agent_id": f.Tenant.Agent.ID, "display_name": "T " + base, "base_tool": base, "config": config}
	for k, v := range extra {
		body[k] = v
	}
	return body
}

func TestConfiguredToolLifecycle(t *testing.T) {
	t.Parallel()
	a := newTestAPI(t)
	f := newToolFixture(t, a)
	tok := f.Tenant.AdminToken

	r := a.call(t, "POST", "/api/admin/configured-tools", tok, f.appTool(map[string]any{
		"bundle_version": 1, "producer_tool_id": f.Python.ID,
		"action_schema": map[string]any{"approve": map[string]any{"label": "Approve"}}, "theme": map[string]any{"accent": "#123456"},
		"default_fullscreen": true, "await_review": true, "await_expiry_seconds": 86400,
		"input_schema": map[string]any{"type": "object", "properties": map[string]any{"report_id": map[string]any{"type": "integer"}}},
	}))
	require.Equal(t, 201, r.Status, "%s", r.Raw)
	id := admID(t, r)
	require.Equal(t, "app_tool", r.Body["base_tool"])
	require.Equal(t, f.Bundle.ID, r.Body["bundle_id"])
	require.EqualValues(t, 1, r.Body["bundle_version"])
	require.Equal(t, f.Python.ID, r.Body["producer_tool_id"])
	require.Equal(t, true, r.Body["await_review"])
	require.Equal(t, true, r.Body["default_fullscreen"])
	require.EqualValues(t, 86400, r.Body["await_expiry_seconds"])
	require.Equal(t, map[string]any{"accent": "#123456"}, r.Body["theme"])

	// Defaults: no input schema is {"type":"object"}, display settings off.
	r = a.call(t, "POST", "/api/admin/configured-tools", tok, f.appTool(map[string]any{"display_name": "Plain"}))
	require.Equal(t, 201, r.Status, "%s", r.Raw)
	plainID := admID(t, r)
	require.Equal(t, map[string]any{"type": "object"}, r.Body["input_schema"])
	require.Equal(t, false, r.Body["await_review"])
	require.Equal(t, false, r.Body["default_fullscreen"])
	require.Nil(t, r.Body["bundle_version"], "unpinned: the newest version")

	for _, body := range []map[string]any{
		f.tool("python_code_tool", map[string]any{"code": "print('hi')"}, nil),
		f.tool("csv_lookup_tool", map[string]any{"file_name": "vendors.csv", "matching_strategy": "exact"}, nil),
		f.tool("postgres_execute_query", map[string]any{"query": "SELECT id, vendor FROM invoices WHERE id = $1"}, map[string]any{"integration_id": f.Postgres.ID}),
		f.tool("mssql_execute_query", map[string]any{"query": "WITH x AS (SELECT 1 AS a) SELECT a FROM x"}, map[string]any{"integration_id": f.MSSQL.ID}),
		f.tool("structured_data_extraction", map[string]any{"instructions": "Extract the header.", "pause_on_validation": true,
			"output_schema": map[string]any{"type": "object", "properties": map[string]any{"total": map[string]any{"type": "number"}}}}, nil),
	} {
		r := a.call(t, "POST", "/api/admin/configured-tools", tok, body)
		require.Equal(t, 201, r.Status, "%v: %s", body["base_tool"], r.Raw)
		require.Equal(t, body["config"], r.Body["config"])
	}

	r = a.call(t, "POST", "/api/admin/configured-tools", tok, f.appTool(nil))
	require.Equal(t, 409, r.Status, "%s", r.Raw)
	require.Contains(t, r.Body["error"], `display_name "Invoice review" is already used by another configured tool of this agent`)
	r = a.call(t, "POST", "/api/admin/configured-tools", tok, f.appTool(map[string]any{"agent_id": f.OtherAgent.ID, "producer_tool_id": nil}))
	require.Equal(t, 201, r.Status, "names are unique per agent only: %s", r.Raw)

	// Update: a merge patch; null clears; the rest is validated as a whole.
	r = a.call(t, "PATCH", "/api/admin/configured-tools/"+id, tok, map[string]any{
		"theme": map[string]any{"accent": "#654321"}, "default_fullscreen": false, "producer_tool_id": nil})
	require.Equal(t, 200, r.Status, "%s", r.Raw)
	require.Equal(t, map[string]any{"accent": "#654321"}, r.Body["theme"])
	require.Equal(t, false, r.Body["default_fullscreen"])
	require.Nil(t, r.Body["producer_tool_id"])
	require.Equal(t, true, r.Body["await_review"], "untouched fields stay")
	r = a.call(t, "PATCH", "/api/admin/configured-tools/"+id, tok, map[string]any{"await_review": false})
	require.Equal(t, 400, r.Status, "expiry without await_review: %s", r.Raw)
	require.Contains(t, r.Body["error"], "await_expiry_seconds needs await_review: true")
	r = a.call(t, "PATCH", "/api/admin/configured-tools/"+id, tok, map[string]any{"display_name": "Plain"})
	require.Equal(t, 409, r.Status, "%s", r.Raw)
	r = a.call(t, "PATCH", "/api/admin/configured-tools/"+id, tok, map[string]any{"base_tool": "python_code_tool"})
	require.Equal(t, 400, r.Status)
	require.Contains(t, r.Body["error"], "base_tool cannot change")
	r = a.call(t, "PATCH", "/api/admin/configured-tools/"+id, tok, map[string]any{"agent_id": f.OtherAgent.ID})
	require.Equal(t, 400, r.Status)
	require.Contains(t, r.Body["error"], "agent_id cannot change")

	r = a.call(t, "GET", "/api/admin/configured-tools/"+id, tok, nil)
	require.Equal(t, 200, r.Status)
	require.Equal(t, map[string]any{"accent": "#654321"}, r.Body["theme"], "a refused patch changed nothing")
	list := admList(t, a.call(t, "GET", "/api/admin/configured-tools?agent_id="+f.OtherAgent.ID, tok, nil), "configured_tools")
	require.Len(t, list, 2, "the other agent's python tool and its app tool")
	list = admList(t, a.call(t, "GET", "/api/admin/configured-tools", tok, nil), "configured_tools")
	require.Len(t, list, 11)

	require.Equal(t, 204, a.call(t, "DELETE", "/api/admin/configured-tools/"+plainID, tok, nil).Status)
	require.Equal(t, 404, a.call(t, "GET", "/api/admin/configured-tools/"+plainID, tok, nil).Status)
	require.Equal(t, []string{"configured_tool.create", "configured_tool.update"}, admAudit(t, a, id))
	require.Equal(t, []string{"configured_tool.create", "configured_tool.delete"}, admAudit(t, a, plainID))
}

func TestConfiguredToolRefusals(t *testing.T) {
	t.Parallel()
	a := newTestAPI(t)
	f := newToolFixture(t, a)
	pg := map[string]any{"integration_id": f.Postgres.ID}
	for _, tc := range []struct {
		name string
		body map[string]any
		msg  string
	}{
		{"no display name", f.appTool(map[string]any{"display_name": " "}), "display_name is required"},
		{"no base tool", f.appTool(map[string]any{"base_tool": nil}), "base_tool is required"},
		{"unknown base tool", f.appTool(map[string]any{"base_tool": "shell_tool"}), `base_tool "shell_tool" is not one of`},
		{"translate_text", f.tool("translate_text", nil, nil), "base_tool translate_text has nothing to configure"},
		{"no agent", f.appTool(map[string]any{"agent_id": nil}), "agent_id is required"},
		{"agent not a uuid", f.appTool(map[string]any{"agent_id": "Invoice agent"}), "agent_id must be a UUID"},
		{"agent of another workspace", f.appTool(map[string]any{"agent_id": f.Foreign.Agent.ID}), "is not an agent of this workspace"},
		{"unknown field", f.appTool(map[string]any{"bundle": "x"}), `unknown field "bundle"`},
		{"wrong type", f.appTool(map[string]any{"await_review": "yes"}), "await_review must be true or false"},
		{"input schema not an object", f.appTool(map[string]any{"input_schema": []any{}}), "input_schema must be a JSON object"},
		{"input schema does not compile", f.appTool(map[string]any{"input_schema": map[string]any{"type": "objekt"}}), "input_schema is not a valid JSON Schema"},
		{"input schema reads a file", f.appTool(map[string]any{"input_schema": map[string]any{"$ref": "file:///etc/passwd"}}), "points outside the schema"},
		{"input schema requires an injected key", f.appTool(map[string]any{"input_schema": map[string]any{"type": "object", "required": []any{"report_id", "configured_tool_id"}}}), "input_schema requires configured_tool_id, which the worker injects"},

		{"app tool without bundle", f.appTool(map[string]any{"bundle_id": nil}), "bundle_id is required for app_tool"},
		{"bundle not a uuid", f.appTool(map[string]any{"bundle_id": "invoice-review"}), "bundle_id must be a UUID"},
		{"unknown bundle", f.appTool(map[string]any{"bundle_id": models.NewID()}), "is not a bundle of this workspace"},
		{"bundle of another workspace", f.appTool(map[string]any{"bundle_id": f.ForeignIDs["bundle"]}), "is not a bundle of this workspace"},
		{"unknown bundle version", f.appTool(map[string]any{"bundle_version": 7}), "has no version 7"},
		{"bundle version zero", f.appTool(map[string]any{"bundle_version": 0}), "bundle_version must be 1 or more"},
		{"app tool without binding", f.appTool(map[string]any{"binding_id": nil}), "binding_id is required for app_tool"},
		{"binding of another workspace", f.appTool(map[string]any{"binding_id": f.ForeignIDs["binding"]}), "is not a binding of this workspace"},
		{"producer not python", f.appTool(map[string]any{"producer_tool_id": f.CSV.ID}), "is a csv_lookup_tool; a producer must be a python_code_tool"},
		{"producer of another agent", f.appTool(map[string]any{"producer_tool_id": f.OtherPython.ID}), "is not a configured tool of this agent"},
		{"producer unknown", f.appTool(map[string]any{"producer_tool_id": models.NewID()}), "is not a configured tool of this agent"},
		{"action schema not an object", f.appTool(map[string]any{"action_schema": "approve"}), "action_schema must be a JSON object"},
		{"theme not an object", f.appTool(map[string]any{"theme": []any{"dark"}}), "theme must be a JSON object"},
		{"expiry without await", f.appTool(map[string]any{"await_expiry_seconds": 60}), "await_expiry_seconds needs await_review: true"},
		{"expiry zero", f.appTool(map[string]any{"await_review": true, "await_expiry_seconds": 0}), "await_expiry_seconds must be between 1 and"},
		{"config on an app tool", f.appTool(map[string]any{"config": map[string]any{"code": "x"}}), "config.code is not a setting of app_tool"},

		{"python without code", f.tool("python_code_tool", map[string]any{}, nil), "config.code is required for python_code_tool"},
		{"python blank code", f.tool("python_code_tool", map[string]any{"code": "  "}, nil), "config.code is required for python_code_tool"},
		{"python code not a string", f.tool("python_code_tool", map[string]any{"code": 5}, nil), "config.code must be a string"},
		{"python config typo", f.tool("python_code_tool", map[string]any{"code": "x", "timeuot": 5}, nil), "config.timeuot is not a setting of python_code_tool"},
		{"python with a bundle", f.tool("python_code_tool", map[string]any{"code": "x"}, map[string]any{"bundle_id": f.Bundle.ID}), "bundle_id is only for app_tool, not python_code_tool"},
		{"python awaiting review", f.tool("python_code_tool", map[string]any{"code": "x"}, map[string]any{"await_review": true}), "await_review is only for app_tool"},
		{"python with an integration", f.tool("python_code_tool", map[string]any{"code": "x"}, pg), "integration_id is only for postgres_execute_query and mssql_execute_query"},
		{"config not an object", f.tool("python_code_tool", nil, map[string]any{"config": "print(1)"}), "config must be a JSON object"},
		{"csv without file", f.tool("csv_lookup_tool", map[string]any{}, nil), "config.file_name is required for csv_lookup_tool"},
		{"csv strategy", f.tool("csv_lookup_tool", map[string]any{"file_name": "a.csv", "matching_strategy": "fuzzy"}, nil), `config.matching_strategy must be "exact" or "llm"`},
		{"sql without query", f.tool("postgres_execute_query", map[string]any{}, pg), "config.query is required for postgres_execute_query"},
		{"sql without integration", f.tool("postgres_execute_query", map[string]any{"query": "SELECT 1"}, nil), "integration_id is required for postgres_execute_query"},
		{"sql integration not a uuid", f.tool("postgres_execute_query", map[string]any{"query": "SELECT 1"}, map[string]any{"integration_id": "pg"}), "integration_id must be a UUID"},
		{"sql integration of another workspace", f.tool("postgres_execute_query", map[string]any{"query": "SELECT 1"}, map[string]any{"integration_id": f.ForeignIDs["integration"]}), "is not an integration of this workspace"},
		{"sql integration of the wrong kind", f.tool("postgres_execute_query", map[string]any{"query": "SELECT 1"}, map[string]any{"integration_id": f.REST.ID}), "is a rest integration; postgres_execute_query needs a postgres one"},
		{"mssql on a postgres integration", f.tool("mssql_execute_query", map[string]any{"query": "SELECT 1"}, pg), "needs a mssql one"},
		{"sql two statements", f.tool("postgres_execute_query", map[string]any{"query": "SELECT 1; DROP TABLE invoices"}, pg), "config.query must be one statement"},
		{"sql delete", f.tool("postgres_execute_query", map[string]any{"query": "DELETE FROM invoices"}, pg), "config.query must be a SELECT or WITH statement"},
		{"sql select into", f.tool("postgres_execute_query", map[string]any{"query": "SELECT * INTO copy FROM invoices"}, pg), "config.query must be read-only: SELECT … INTO creates a table"},
		{"extraction without instructions", f.tool("structured_data_extraction", map[string]any{"output_schema": map[string]any{"type": "object"}}, nil), "config.instructions is required for structured_data_extraction"},
		{"extraction without schema", f.tool("structured_data_extraction", map[string]any{"instructions": "x"}, nil), "config.output_schema is required for structured_data_extraction"},
		{"extraction bad schema", f.tool("structured_data_extraction", map[string]any{"instructions": "x", "output_schema": map[string]any{"type": 5}}, nil), "config.output_schema is not a valid JSON Schema"},
		{"extraction pause flag", f.tool("structured_data_extraction", map[string]any{"instructions": "x", "output_schema": map[string]any{}, "pause_on_validation": "yes"}, nil), "config.pause_on_validation must be true or false"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := a.call(t, "POST", "/api/admin/configured-tools", f.Tenant.AdminToken, tc.body)
			require.Equal(t, 400, r.Status, "%s", r.Raw)
			require.Contains(t, r.Body["error"], tc.msg)
		})
	}
	var n int64
	require.NoError(t, a.Store.DB.Model(&models.ConfiguredTool{}).Where("workspace_id = ?", f.Tenant.Workspace.ID).Count(&n).Error)
	require.EqualValues(t, 3, n, "only the fixture's tools: nothing refused was stored")
}
