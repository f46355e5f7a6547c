package api_test

import (
	"encoding/json"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/appruntime/appruntime/internal/bindingspec"
	"github.com/appruntime/appruntime/internal/gateway"
	"github.com/appruntime/appruntime/models"
)

// leak is what the upstream and the token endpoint say; no runtime error
// message may carry it.
const leak = "internal-host-db7.corp says: password expired for svc_export"

// restIntegration creates an integration of workspaceID whose sealed
// secrets are s.
func (f *runtimeFixture) restIntegration(t *testing.T, workspaceID, baseURL string, s gateway.Secrets) string {
	t.Helper()
	sealed, err := f.api.P.Secrets.SealJSON(s)
	require.NoError(t, err)
	integ := models.Integration{ID: models.NewID(), WorkspaceID: workspaceID, Name: "crm", Kind: "rest", BaseURL: baseURL, SecretsEnc: sealed}
	require.NoError(t, f.db().Create(&integ).Error)
	return integ.ID
}

// Pre-flight failures of a lookup and of an action's http op through the
// real gateway: a token endpoint that refuses and a transport failure are
// 502, an integration moved to another workspace is 403; none of the
// messages quotes the token endpoint or the upstream, every reply carries a
// request id (the detail is logged under it), and the action's writes are
// rolled back.
func TestPreflightFailuresAreStatusesWithoutTheUpstreamsWords(t *testing.T) {
	t.Parallel()
	var upstreamHits atomic.Int32
	upstream := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		upstreamHits.Add(1)
		if r.URL.Path == "/hangup" {
			conn, _, err := w.(http.Hijacker).Hijack()
			if err == nil {
				_ = conn.Close()
			}
			return
		}
		_, _ = w.Write([]byte(`{"ok":true}`))
	}))
	t.Cleanup(upstream.Close)
	tokens := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(400)
		_, _ = w.Write([]byte(`{"error":"invalid_client","error_description":"` + leak + `"}`))
	}))
	t.Cleanup(tokens.Close)
	closed, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	deadURL := "http://" + closed.Addr().String()
	require.NoError(t, closed.Close())

	f := newRuntimeFixture(t)
	generousRate(f.api)
	ws := f.tenant.Workspace.ID
	oauth := json.RawMessage(`{"client_id":"c","client_secret":"s"}`)
	refusing := f.restIntegration(t, ws, upstream.URL, gateway.Secrets{OAuth: oauth})
	bearer := f.restIntegration(t, ws, upstream.URL, gateway.Secrets{BearerToken: "b"})
	moved := f.restIntegration(t, ws, upstream.URL, gateway.Secrets{BearerToken: "b"})

	spec := fixtureSpec()
	spec.HTTPCalls = []bindingspec.HTTPCall{
		{Op: "token_refused", Method: "GET", URL: upstream.URL + "/a", IntegrationID: refusing,
			Auth: &bindingspec.Auth{Kind: bindingspec.AuthClientCredentials, TokenURL: tokens.URL + "/token"}},
		{Op: "token_unreachable", Method: "GET", URL: upstream.URL + "/a", IntegrationID: refusing,
			Auth: &bindingspec.Auth{Kind: bindingspec.AuthClientCredentials, TokenURL: deadURL + "/token"}},
		{Op: "hangup", Method: "GET", URL: upstream.URL + "/hangup", IntegrationID: bearer, Auth: &bindingspec.Auth{Kind: bindingspec.AuthBearer}},
		{Op: "unreachable", Method: "GET", URL: deadURL + "/x"},
		{Op: "moved", Method: "GET", URL: upstream.URL + "/a", IntegrationID: moved, Auth: &bindingspec.Auth{Kind: bindingspec.AuthBearer}},
	}
	spec.Actions = append(spec.Actions, bindingspec.Action{Name: "export", Writes: []string{"record_decision"}, HTTPCalls: []string{"token_refused"}})
	f.saveSpec(t, spec)
	// Saved while it was ours; since then it went to another workspace.
	other := models.Workspace{ID: models.NewID(), Name: "other"}
	require.NoError(t, f.db().Create(&other).Error)
	require.NoError(t, f.db().Model(&models.Integration{}).Where("id = ?", moved).Update("workspace_id", other.ID).Error)

	cases := []struct {
		op      string
		status  int
		message string
	}{
		{"token_refused", 502, `http_call "token_refused": could not obtain a token from the token URL`},
		{"token_unreachable", 502, `http_call "token_unreachable": could not obtain a token from the token URL`},
		{"hangup", 502, `http_call "hangup": the upstream could not be reached`},
		{"unreachable", 502, `http_call "unreachable": the upstream could not be reached`},
		{"moved", 403, `http_call "moved": its integration is not in the session's workspace`},
	}
	for _, tc := range cases {
		r := f.verb(t, "read", map[string]any{"op": tc.op})
		require.Equal(t, tc.status, r.Status, "%s: %s", tc.op, r.Raw)
		require.Equal(t, tc.message, r.Body["error"], tc.op)
		require.NotContains(t, string(r.Raw), "password expired", tc.op)
		require.NotEmpty(t, r.Header.Get("X-Request-Id"), "%s: the logged detail is found by the request id", tc.op)
	}
	require.EqualValues(t, 1, upstreamHits.Load(), "only the hang-up reached the upstream: no call without its token, none to another workspace's integration")

	r := f.verb(t, "action", map[string]any{"op": "export", "payload": map[string]any{"rows": map[string]any{"record_decision": map[string]any{"decision": "x"}}}})
	require.Equal(t, 502, r.Status, string(r.Raw))
	require.False(t, strings.Contains(string(r.Raw), "password expired"), string(r.Raw))
	var decisions int64
	require.NoError(t, f.source.DB.Raw("SELECT count(*) FROM decisions").Scan(&decisions).Error)
	require.Zero(t, decisions, "a token failure rolls the action's writes back")
}
