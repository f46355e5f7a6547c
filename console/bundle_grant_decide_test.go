package console_test

import (
	"context"
	"net/http"
	"net/url"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/appruntime/appruntime/models"
)

// TestBundleGrantsDeclaredAndDecidedInTheConsole declares grants with an
// upload from the bundle page, is refused a bad origin with what was typed
// kept, approves the declaration (audited), is told 409 when deciding it
// again, withdraws it, refuses the next version's, and is refused a
// decision without the CSRF token.
func TestBundleGrantsDeclaredAndDecidedInTheConsole(t *testing.T) {
	t.Parallel()
	c := newTestConsole(t)
	f := seedDemo(t, c.P, c.Tenant)
	cl := c.signedIn(t)
	ws := c.Tenant.Workspace.ID
	path := "/bundles/" + f.BundleID

	show := cl.get(path)
	require.Contains(t, show.Body, `id="bundle-grants"`)
	require.Contains(t, show.Body, "No version declares network grants")

	p := postMultipart(cl, path+"/versions", map[string]string{"content": "<p>v2</p>", "content_type": "text/html",
		"connectDomains": "https://*.example.com"}, "", "", nil)
	require.Equal(t, http.StatusBadRequest, p.Status, p.Body)
	require.Contains(t, p.Body, `connectDomains: &#34;https://*.example.com&#34; is refused: wildcards are not allowed`)
	require.Contains(t, p.Body, `>https://*.example.com</textarea>`, "what the admin typed is kept")

	p = postMultipart(cl, path+"/versions", map[string]string{"content": "<p>v2</p>", "content_type": "text/html",
		"connectDomains": "https://data.example.org", "resourceDomains": "https://cdn.example.org\r\nhttps://fonts.example.org"}, "", "", nil)
	require.Equal(t, http.StatusSeeOther, p.Status, p.Body)
	show = cl.get(path)
	require.Contains(t, show.Body, `<tr data-version="2" data-state="pending">`)
	require.Contains(t, show.Body, `<code>https://fonts.example.org</code>`)
	require.Contains(t, show.Body, `action="/bundles/`+f.BundleID+`/versions/2/grants/approve"`)

	p = cl.post(path+"/versions/2/grants/approve", nil)
	require.Equal(t, http.StatusSeeOther, p.Status, p.Body)
	require.Equal(t, path+"?notice=grant_approve", p.Header.Get("Location"))
	require.Equal(t, int64(1), auditCount(t, c.Store, ws, "bundle.grant.approve", f.BundleID))
	show = cl.get(path)
	require.Contains(t, show.Body, `<tr data-version="2" data-state="approved">`)
	require.Contains(t, show.Body, "user:"+c.Tenant.Admin.ID, "who decided")

	p = cl.post(path+"/versions/2/grants/approve", nil)
	require.Equal(t, http.StatusConflict, p.Status, p.Body)
	require.Contains(t, p.Body, "the network grants of v2 are approved; only pending grants can be approved")
	p = cl.post(path+"/versions/2/grants/refuse", nil)
	require.Equal(t, http.StatusConflict, p.Status, p.Body)
	require.Equal(t, http.StatusNotFound, cl.post(path+"/versions/1/grants/approve", nil).Status, "v1 declares nothing")
	require.Equal(t, http.StatusNotFound, cl.post(path+"/versions/2/grants/bless", nil).Status)

	cl.get(path)
	p = cl.post(path+"/versions/2/grants/withdraw", nil)
	require.Equal(t, http.StatusSeeOther, p.Status, p.Body)

	p = postMultipart(cl, path+"/versions", map[string]string{"content": "<p>v3</p>", "content_type": "text/html",
		"frameDomains": "https://widget.example.org"}, "", "", nil)
	require.Equal(t, http.StatusSeeOther, p.Status, p.Body)
	cl.get(path)
	p = cl.post(path+"/versions/3/grants/approve", url.Values{"csrf": {"forged"}})
	require.Equal(t, http.StatusForbidden, p.Status, p.Body)
	p = cl.post(path+"/versions/3/grants/refuse", nil)
	require.Equal(t, http.StatusSeeOther, p.Status, p.Body)

	d, err := c.P.Bundles.Get(context.Background(), ws, f.BundleID)
	require.NoError(t, err)
	require.Nil(t, d.Versions[0].Grant)
	require.Equal(t, models.GrantWithdrawn, d.Versions[1].Grant.State)
	require.Equal(t, models.GrantRefused, d.Versions[2].Grant.State)
	require.Equal(t, int64(1), auditCount(t, c.Store, ws, "bundle.grant.withdraw", f.BundleID))
	require.Equal(t, int64(1), auditCount(t, c.Store, ws, "bundle.grant.refuse", f.BundleID))
}
