package console_test

import (
	"context"
	"html"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/appruntime/appruntime/internal/admin"
)

// TestIntegrationFormsKeepSecretsWriteOnly creates a REST integration with
// a bearer token and OAuth settings through the console form, edits it with
// a refused base URL (400, the admin's input kept, the field named), saves
// with blank secret fields (the stored ones stay), and deletes it; each
// change is audited as the API's is, and no secret value appears in any
// response body.
func TestIntegrationFormsKeepSecretsWriteOnly(t *testing.T) {
	t.Parallel()
	c := newTestConsole(t)
	cl := c.signedIn(t)
	ws := c.Tenant.Workspace.ID
	var bodies []string
	keep := func(p page) page { bodies = append(bodies, p.Body); return p }

	form := keep(cl.get("/integrations/new?kind=rest"))
	require.Equal(t, http.StatusOK, form.Status, form.Body)
	require.Contains(t, form.Body, `name="secret_bearer_token"`)
	require.NotContains(t, form.Body, `name="secret_dsn"`, "a REST integration takes no DSN")

	p := keep(cl.post("/integrations", url.Values{"kind": {"rest"}, "name": {"Shop API"}, "base_url": {"https://shop.example.test/v1"},
		"config": {`{"timeout_ms": 5000}`}, "secret_bearer_token": {"s3cret-bearer"},
		"oauth_client_id": {"shop-client"}, "oauth_client_secret": {"s3cret-client"}, "oauth_scope": {"orders"}}))
	require.Equal(t, http.StatusSeeOther, p.Status, p.Body)
	list, err := c.P.Admin.ListIntegrations(context.Background(), ws)
	require.NoError(t, err)
	require.Len(t, list, 1)
	i := list[0]
	require.Equal(t, "/integrations/"+i.ID+"?notice=integration_saved", p.Header.Get("Location"))
	require.Equal(t, []string{"bearer_token", "oauth_config"}, i.SecretsSet)
	require.EqualValues(t, 1, auditCount(t, c.Store, ws, "integration.create", i.ID))

	edit := keep(cl.get("/integrations/" + i.ID))
	require.Equal(t, http.StatusOK, edit.Status)
	require.Contains(t, edit.Body, `value="Shop API"`)
	require.Contains(t, edit.Body, "secret-set", "the page says a secret is set")
	require.Contains(t, edit.Body, `class="test-connection"`, "test connection is offered on the edit page")

	// A refused base URL: 400, the field named, the input kept, no secret echoed.
	bad := keep(cl.post("/integrations/"+i.ID, url.Values{"kind": {"rest"}, "name": {"Shop API renamed"}, "base_url": {"ftp://shop.example.test"},
		"config": {`{"timeout_ms": 9000}`}, "secret_bearer_token": {"s3cret-new-bearer"}}))
	require.Equal(t, http.StatusBadRequest, bad.Status, bad.Body)
	require.Contains(t, bad.Body, `data-field="base_url"`, "the refusal is beside the base URL")
	require.Contains(t, bad.Body, `value="Shop API renamed"`)
	require.Contains(t, bad.Body, `value="ftp://shop.example.test"`)
	require.Contains(t, html.UnescapeString(bad.Body), `"timeout_ms": 9000`)
	got, err := c.P.Admin.GetIntegration(context.Background(), ws, i.ID)
	require.NoError(t, err)
	require.Equal(t, "Shop API", got.Name, "nothing half-written")

	// Invalid JSON config is named too.
	badCfg := keep(cl.post("/integrations/"+i.ID, url.Values{"kind": {"rest"}, "name": {"Shop API"}, "base_url": {"https://shop.example.test/v1"}, "config": {`{"oops"`}}))
	require.Equal(t, http.StatusBadRequest, badCfg.Status)
	require.Contains(t, badCfg.Body, `data-field="config"`)

	// Blank secret fields keep the stored secrets; a ticked remove drops one.
	ok := keep(cl.post("/integrations/"+i.ID, url.Values{"kind": {"rest"}, "name": {"Shop API v2"}, "base_url": {"https://shop.example.test/v2"},
		"config": {""}, "remove_oauth_config": {"on"}}))
	require.Equal(t, http.StatusSeeOther, ok.Status, ok.Body)
	got, err = c.P.Admin.GetIntegration(context.Background(), ws, i.ID)
	require.NoError(t, err)
	require.Equal(t, "Shop API v2", got.Name)
	require.Equal(t, []string{"bearer_token"}, got.SecretsSet)
	require.EqualValues(t, 1, auditCount(t, c.Store, ws, "integration.update", i.ID))
	keep(cl.get("/integrations"))
	keep(cl.get("/integrations/" + i.ID))

	// A component's env must be an object of strings: the field is named.
	comp := keep(cl.post("/integrations", url.Values{"kind": {admin.KindComponent}, "name": {"Widgets"}, "base_url": {"https://widgets.example.test"},
		"secret_env": {`{"API_KEY": 42, "PW": "s3cret-env"}`}}))
	require.Equal(t, http.StatusBadRequest, comp.Status, comp.Body)
	require.Contains(t, comp.Body, `data-field="secrets.env"`)
	require.Contains(t, comp.Body, `value="Widgets"`)

	del := keep(cl.post("/integrations/"+i.ID+"/delete", nil))
	require.Equal(t, http.StatusSeeOther, del.Status, del.Body)
	_, err = c.P.Admin.GetIntegration(context.Background(), ws, i.ID)
	require.Error(t, err)
	require.EqualValues(t, 1, auditCount(t, c.Store, ws, "integration.delete", i.ID))

	for n, b := range bodies {
		require.False(t, strings.Contains(b, "s3cret"), "response %d shows a secret", n)
	}
}
