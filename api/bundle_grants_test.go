package api_test

import (
	"net/url"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/appruntime/appruntime/internal/bundle"
	"github.com/appruntime/appruntime/internal/testkit"
	"github.com/appruntime/appruntime/models"
)

// TestBundleGrantsDeclaredOnUploadAndServedOnceApproved declares grants on
// upload (query parameters, repeated or comma-separated), is refused a bad
// origin with a 400 naming the list and the entry and nothing stored, sees
// the pending declaration served under the default policy with no-cache,
// and after the admin's approval (through the API: a pending one cannot be
// withdrawn, another workspace's admin gets a 404) the same URL serves exactly the approved origins with a new
// ETag, so a revalidating cache does not keep the old policy.
func TestBundleGrantsDeclaredOnUploadAndServedOnceApproved(t *testing.T) {
	t.Parallel()
	a := newTestAPI(t)
	tn := testkit.NewTenant(t, a.Store.DB)
	html := []byte(`<!doctype html><p>charts</p>`)

	for query, want := range map[string]string{
		"connectDomains=http://data.example.org":    `connectDomains: \"http://data.example.org\" is refused: only https origins are allowed`,
		"resourceDomains=https://*.jsdelivr.net":    `resourceDomains: \"https://*.jsdelivr.net\" is refused: wildcards are not allowed`,
		"frameDomains=https://10.0.0.8":             `frameDomains: \"https://10.0.0.8\" is refused: the address is loopback, private`,
		"connectDomains=https://grafana.internal":   `connectDomains: \"https://grafana.internal\" is refused`,
		"connectDomains=https://api.example.com/v1": `connectDomains: \"https://api.example.com/v1\" is refused`,
	} {
		r := a.call(t, "POST", "/api/admin/bundles?name=charts&"+query, tn.AdminToken, html, "Content-Type", "text/html")
		require.Equal(t, 400, r.Status, "%s: %s", query, r.Raw)
		require.Contains(t, string(r.Raw), want, query)
	}
	var n int64
	require.NoError(t, a.Store.DB.Model(&models.Bundle{}).Where("workspace_id = ?", tn.Workspace.ID).Count(&n).Error)
	require.Zero(t, n, "a refused declaration stores nothing")

	q := url.Values{"name": {"charts"}, "connectDomains": {"https://data.example.org"},
		"resourceDomains": {"https://cdn.example.org,https://fonts.example.org", "https://127.0.0.1:8443"}}
	r := a.call(t, "POST", "/api/admin/bundles?"+q.Encode(), tn.AdminToken, html, "Content-Type", "text/html")
	require.Equal(t, 201, r.Status, "%s", r.Raw)
	id := admID(t, r)
	grants := r.Body["grants"].(map[string]any)
	require.Equal(t, "pending", grants["state"])
	require.Equal(t, []any{"https://cdn.example.org", "https://fonts.example.org", "https://127.0.0.1:8443"}, grants["resourceDomains"],
		"127.0.0.1 is allowed under the test OUTBOUND_ALLOW_CIDRS")
	require.Equal(t, []any{}, grants["frameDomains"])

	u := a.URL + "/bundles/" + id + "/1"
	res, body := fetch(t, u)
	require.Equal(t, 200, res.StatusCode)
	require.Equal(t, html, body)
	require.Equal(t, bundle.RevalidateCacheControl, res.Header.Get("Cache-Control"), "a declared version is revalidated")
	pendingCSP, pendingTag := res.Header.Get("Content-Security-Policy"), res.Header.Get("ETag")
	require.NotContains(t, pendingCSP, "example.org", "pending: the default policy")
	require.Contains(t, pendingCSP, "connect-src "+a.URL+"/api/app-runtime/;")
	res, _ = fetch(t, u, "If-None-Match", pendingTag)
	require.Equal(t, 304, res.StatusCode)

	r = a.call(t, "POST", "/api/admin/bundles/"+id+"/versions/1/grants/withdraw", tn.AdminToken, nil)
	require.Equal(t, 409, r.Status, "a pending declaration cannot be withdrawn: %s", r.Raw)
	require.Contains(t, string(r.Raw), "only approved grants can be withdrawn")
	other := testkit.NewTenant(t, a.Store.DB)
	r = a.call(t, "POST", "/api/admin/bundles/"+id+"/versions/1/grants/approve", other.AdminToken, nil)
	require.Equal(t, 404, r.Status, "another workspace's bundle: %s", r.Raw)
	r = a.call(t, "POST", "/api/admin/bundles/"+id+"/versions/1/grants/approve", tn.AdminToken, nil)
	require.Equal(t, 200, r.Status, "%s", r.Raw)
	require.Equal(t, "approved", r.Body["state"])
	require.Equal(t, []any{"https://data.example.org"}, r.Body["connectDomains"])
	decider, _ := r.Body["decided_by"].(string)
	require.True(t, strings.HasPrefix(decider, "token:"), "decided by the admin's token: %q", decider)
	var audited int64
	require.NoError(t, a.Store.DB.Model(&models.AuditEntry{}).Where("workspace_id = ? AND action = ? AND target_id = ?",
		tn.Workspace.ID, "bundle.grant.approve", id).Count(&audited).Error)
	require.Equal(t, int64(1), audited)
	res, body = fetch(t, u, "If-None-Match", pendingTag)
	require.Equal(t, 200, res.StatusCode, "the cached copy's policy is stale: the bytes come again with the new one")
	require.Equal(t, html, body)
	require.NotEqual(t, pendingTag, res.Header.Get("ETag"))
	directives := strings.Split(res.Header.Get("Content-Security-Policy"), "; ")
	res2 := " https://cdn.example.org https://fonts.example.org https://127.0.0.1:8443"
	for _, d := range []string{
		"connect-src " + a.URL + "/api/app-runtime/ https://data.example.org",
		"script-src 'self' " + a.URL + " 'unsafe-inline' " + a.URL + "/sdk/" + res2,
		"img-src 'self' " + a.URL + " data: blob:" + res2,
		"font-src 'self' " + a.URL + res2,
		"frame-src 'none'",
	} {
		require.Contains(t, directives, d)
	}

	r = a.call(t, "GET", "/api/admin/bundles/"+id, tn.AdminToken, nil)
	require.Equal(t, 200, r.Status, "%s", r.Raw)
	v := r.Body["versions"].([]any)[0].(map[string]any)["grants"].(map[string]any)
	require.Equal(t, "approved", v["state"])
	require.Equal(t, decider, v["decided_by"])

	r = a.call(t, "POST", "/api/admin/bundles/"+id+"/versions?connectDomains=https://data.example.org", tn.AdminToken, html, "Content-Type", "text/html")
	require.Equal(t, 201, r.Status, "%s", r.Raw)
	require.Equal(t, "pending", r.Body["grants"].(map[string]any)["state"], "a new version's declaration needs its own approval")
	res, _ = fetch(t, a.URL+"/bundles/"+id+"/2")
	require.NotContains(t, res.Header.Get("Content-Security-Policy"), "data.example.org")
}
