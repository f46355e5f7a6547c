package api_test

import (
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/appruntime/appruntime/internal/testkit"
)

// TestAdminIntegrationTestConnection: POST /api/admin/integrations/:id/test
// connects as the integration's calls do: a reachable upstream answers 200
// with what was reached, a link-local base URL is refused (400) by the SSRF
// guard before any dial, another workspace's integration is not found, and
// a test changes nothing (no audit entry).
func TestAdminIntegrationTestConnection(t *testing.T) {
	t.Parallel()
	a := newTestAPI(t)
	tn := testkit.NewTenant(t, a.Store.DB)
	other := testkit.NewTenant(t, a.Store.DB)
	upstream := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		require.Empty(t, r.Header.Get("Authorization"), "a test sends no credentials")
		w.WriteHeader(http.StatusTeapot)
	}))
	t.Cleanup(upstream.Close)
	create := func(name, baseURL string) string {
		r := a.call(t, "POST", "/api/admin/integrations", tn.AdminToken, map[string]any{
			"name": name, "kind": "rest", "base_url": baseURL, "secrets": map[string]any{"bearer_token": "s3cret-token"},
		})
		require.Equal(t, 201, r.Status, "%s", r.Raw)
		return admID(t, r)
	}
	up, meta := create("upstream", upstream.URL), create("metadata", "http://169.254.169.254/latest")

	r := a.call(t, "POST", "/api/admin/integrations/"+up+"/test", tn.AdminToken, nil)
	require.Equal(t, 200, r.Status, "%s", r.Raw)
	require.Equal(t, true, r.Body["ok"])
	require.Contains(t, r.Body["result"], "answered HTTP 418")
	require.NotContains(t, string(r.Raw), "s3cret")

	r = a.call(t, "POST", "/api/admin/integrations/"+meta+"/test", tn.AdminToken, nil)
	require.Equal(t, 400, r.Status, "%s", r.Raw)
	require.Contains(t, string(r.Raw), "base_url: the host resolves to an address the platform never connects to")

	r = a.call(t, "POST", "/api/admin/integrations/"+up+"/test", other.AdminToken, nil)
	require.Equal(t, 404, r.Status, "another workspace's integration is not found")
	r = a.call(t, "POST", "/api/admin/integrations/"+up+"/test", "", nil)
	require.Equal(t, 401, r.Status)
	require.Equal(t, []string{"integration.create"}, admAudit(t, a, up), "a test changes nothing")
}
