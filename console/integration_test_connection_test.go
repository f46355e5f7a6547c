package console_test

import (
	"context"
	"encoding/json"
	"html"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/appruntime/appruntime/internal/admin"
)

// TestIntegrationTestConnectionRunsTheRealGuards presses "Test connection"
// on integrations of each network kind: a reachable REST upstream answers,
// a base URL on a link-local address is refused by the SSRF guard before
// any dial, REST credentials of the wrong shape are named, and a Postgres
// server that does not listen is reported as unreachable, each in the
// product's words and without a secret on the page.
func TestIntegrationTestConnectionRunsTheRealGuards(t *testing.T) {
	t.Parallel()
	c := newTestConsole(t)
	cl := c.signedIn(t)
	var hits atomic.Int32
	upstream := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		require.Empty(t, r.Header.Get("Authorization"), "a test sends no credentials")
		w.WriteHeader(http.StatusTeapot)
	}))
	t.Cleanup(upstream.Close)
	bg, ws, actor := context.Background(), c.Tenant.Workspace.ID, "user:"+c.Tenant.Admin.ID
	secret := func(v string) map[string]json.RawMessage {
		raw, err := json.Marshal(v)
		require.NoError(t, err)
		return map[string]json.RawMessage{"bearer_token": raw}
	}
	for _, tc := range []struct {
		name   string
		in     admin.IntegrationInput
		status int
		want   string
	}{
		{"reachable", admin.IntegrationInput{Name: "Upstream", Kind: admin.KindREST, BaseURL: upstream.URL, Secrets: secret("s3cret-token")},
			http.StatusOK, "answered HTTP 418"},
		{"ssrf", admin.IntegrationInput{Name: "Metadata", Kind: admin.KindREST, BaseURL: "http://169.254.169.254/latest", Secrets: secret("s3cret-token")},
			http.StatusBadRequest, "base_url: the host resolves to an address the platform never connects to"},
		{"oauth shape", admin.IntegrationInput{Name: "Half OAuth", Kind: admin.KindREST, BaseURL: upstream.URL,
			Secrets: map[string]json.RawMessage{"oauth_config": json.RawMessage(`{"client_id": "s3cret-id"}`)}},
			http.StatusBadRequest, "oauth_config needs client_id and client_secret"},
		{"postgres down", admin.IntegrationInput{Name: "Down", Kind: admin.KindPostgres,
			Secrets: map[string]json.RawMessage{"dsn": json.RawMessage(`"postgres://reader:s3cret-pw@127.0.0.1:1/shop?sslmode=disable"`)}},
			http.StatusBadGateway, "could not connect to the DSN's host and port"},
	} {
		i, err := c.P.Admin.CreateIntegration(bg, ws, actor, tc.in)
		require.NoError(t, err, tc.name)
		require.Equal(t, http.StatusOK, cl.get("/integrations").Status)
		p := cl.post("/integrations/"+i.ID+"/test", nil)
		require.Equal(t, tc.status, p.Status, tc.name)
		body := html.UnescapeString(p.Body)
		require.Contains(t, body, tc.want, tc.name)
		require.False(t, strings.Contains(body, "s3cret"), "%s: no secret is shown", tc.name)
	}
	require.EqualValues(t, 1, hits.Load(), "only the reachable test reached the upstream: credentials of the wrong shape stop a test before it is sent")
}
