package console_test

import (
	"context"
	"html"
	"net/http"
	"net/url"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestConfiguredToolForms creates a python_code_tool through the console
// form, edits it with an input schema the API refuses (400, the schema kept,
// the field named, nothing saved), saves a valid edit and deletes it, each
// change audited as the API's is.
func TestConfiguredToolForms(t *testing.T) {
	t.Parallel()
	c := newTestConsole(t)
	cl := c.signedIn(t)
	ws, agent := c.Tenant.Workspace.ID, c.Tenant.Agent.ID
	bg := context.Background()

	form := cl.get("/tools/new?base_tool=python_code_tool")
	require.Equal(t, http.StatusOK, form.Status, form.Body)
	require.Contains(t, form.Body, `name="input_schema"`)

	// A missing required config key is named beside the config editor.
	p := cl.post("/tools", url.Values{"base_tool": {"python_code_tool"}, "agent_id": {agent}, "display_name": {"Totals"}, "config": {`{}`}})
	require.Equal(t, http.StatusBadRequest, p.Status, p.Body)
	require.Contains(t, p.Body, `data-field="config"`)
	require.Contains(t, p.Body, `value="Totals"`)

	schema := `{"type": "object", "properties": {"n": {"type": "integer"}}}`
	p = cl.post("/tools", url.Values{"base_tool": {"python_code_tool"}, "agent_id": {agent}, "display_name": {"Totals"},
		"config": {`{"code": "print(1)"}`}, "input_schema": {schema}})
	require.Equal(t, http.StatusSeeOther, p.Status, p.Body)
	list, err := c.P.Tools.List(bg, ws, agent)
	require.NoError(t, err)
	require.Len(t, list, 1)
	id := list[0].ID
	require.EqualValues(t, 1, auditCount(t, c.Store, ws, "configured_tool.create", id))

	edit := cl.get("/tools/" + id + "/edit")
	require.Equal(t, http.StatusOK, edit.Status, edit.Body)
	require.Contains(t, html.UnescapeString(edit.Body), "\"type\": \"integer\"", "the schema is pretty-printed in the editor")
	require.Contains(t, cl.get("/tools/"+id).Body, "/tools/"+id+"/edit", "the tool page links its editor")

	bad := `{"type": "objekt"}`
	p = cl.post("/tools/"+id, url.Values{"base_tool": {"python_code_tool"}, "agent_id": {agent}, "display_name": {"Totals 2"},
		"config": {`{"code": "print(2)"}`}, "input_schema": {bad}})
	require.Equal(t, http.StatusBadRequest, p.Status, p.Body)
	require.Contains(t, p.Body, `data-field="input_schema"`)
	require.Contains(t, html.UnescapeString(p.Body), bad, "the admin's schema is kept")
	require.Contains(t, p.Body, `value="Totals 2"`)
	got, err := c.P.Tools.Get(bg, ws, id)
	require.NoError(t, err)
	require.Equal(t, "Totals", got.DisplayName, "nothing half-written")

	p = cl.post("/tools/"+id, url.Values{"base_tool": {"python_code_tool"}, "agent_id": {agent}, "display_name": {"Totals 2"},
		"config": {`{"code": "print(2)"}`}, "input_schema": {schema}})
	require.Equal(t, http.StatusSeeOther, p.Status, p.Body)
	got, err = c.P.Tools.Get(bg, ws, id)
	require.NoError(t, err)
	require.Equal(t, "Totals 2", got.DisplayName)

	p = cl.post("/tools/"+id+"/delete", nil)
	require.Equal(t, http.StatusSeeOther, p.Status, p.Body)
	_, err = c.P.Tools.Get(bg, ws, id)
	require.Error(t, err)
}
