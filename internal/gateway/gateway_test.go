package gateway_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/appruntime/appruntime/internal/apperr"
	"github.com/appruntime/appruntime/internal/bindingspec"
	"github.com/appruntime/appruntime/internal/gateway"
	"github.com/appruntime/appruntime/internal/testkit"
)

// The escaping table, end to end: what the upstream received (Host and
// request line) for each value, or the refusal and an upstream that saw
// nothing. Every name resolves to the loopback upstream through a DNS stub.
func TestTheURLSentForEachValue(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	up := newUpstream(t, jsonReply(`{}`))
	g := e.gateway(gateway.Options{Resolver: newDNSStub(t, netip.MustParseAddr("127.0.0.1")).resolver()})
	c := call("http://{{tenant}}.crm.example.test:" + up.port() + "/v1/accounts/{{id}}/notes?q={{q}}&limit=5")
	c.Query = map[string]string{"sort": "{{sort}}"}
	ok := map[string]any{"tenant": "acme", "id": "42", "q": "open", "sort": "date"}
	with := func(k string, v any) map[string]any {
		m := map[string]any{}
		for key, val := range ok {
			m[key] = val
		}
		m[k] = v
		return m
	}
	host := "acme.crm.example.test:" + up.port()
	cases := []struct {
		name      string
		values    map[string]any
		host, uri string
		code      apperr.Code
	}{
		{"as authored", ok, host, "/v1/accounts/42/notes?q=open&limit=5&sort=date", ""},
		{"..", with("id", ".."), "", "", apperr.Forbidden},
		{"%2e%2e", with("id", "%2e%2e"), "", "", apperr.Forbidden},
		{"a/b", with("id", "a/b"), host, "/v1/accounts/a%2Fb/notes?q=open&limit=5&sort=date", ""},
		{"a?b=c in the path", with("id", "a?b=c"), host, "/v1/accounts/a%3Fb%3Dc/notes?q=open&limit=5&sort=date", ""},
		{"a?b=c in the query", with("q", "a?b=c&limit=1000"), host, "/v1/accounts/42/notes?q=a%3Fb%3Dc%26limit%3D1000&limit=5&sort=date", ""},
		{"a&b in the query map", with("sort", "a&admin=1"), host, "/v1/accounts/42/notes?q=open&limit=5&sort=a%26admin%3D1", ""},
		{"# in the path", with("id", "#"), host, "/v1/accounts/%23/notes?q=open&limit=5&sort=date", ""},
		{"# in the query", with("q", "#x"), host, "/v1/accounts/42/notes?q=%23x&limit=5&sort=date", ""},
		{"CRLF in the path", with("id", "a\r\nX: y"), "", "", apperr.Forbidden},
		{"CRLF in the query", with("q", "a\r\nX: y"), host, "/v1/accounts/42/notes?q=a%0D%0AX%3A+y&limit=5&sort=date", ""},
		{"%00 in the path", with("id", "%00"), "", "", apperr.Forbidden},
		{"%00 in the query", with("q", "%00"), host, "/v1/accounts/42/notes?q=%2500&limit=5&sort=date", ""},
		{"[::1] in the path", with("id", "[::1]"), host, "/v1/accounts/%5B%3A%3A1%5D/notes?q=open&limit=5&sort=date", ""},
		{"empty in the query", with("q", ""), host, "/v1/accounts/42/notes?q=&limit=5&sort=date", ""},
		{"empty in the path", with("id", ""), "", "", apperr.Invalid},
		{"absent", map[string]any{"tenant": "acme", "q": "x", "sort": "y"}, "", "", apperr.Invalid},
		{"a\uff0eevil in the host", with("tenant", "a\uff0eevil"), "", "", apperr.Forbidden},
		{"-a in the host", with("tenant", "-a"), "", "", apperr.Forbidden},
		{"64-character label", with("tenant", strings.Repeat("a", 64)), "", "", apperr.Forbidden},
		{"63-character label", with("tenant", strings.Repeat("a", 63)), strings.Repeat("a", 63) + ".crm.example.test:" + up.port(), "/v1/accounts/42/notes?q=open&limit=5&sort=date", ""},
		{"xn-- label", with("tenant", "xn--80ak6aa92e"), "", "", apperr.Forbidden},
		{"[::1] in the host", with("tenant", "[::1]"), "", "", apperr.Forbidden},
		{"%00 in the host", with("tenant", "%00"), "", "", apperr.Forbidden},
		{"userinfo in the host", with("tenant", "evil.test@acme"), "", "", apperr.Forbidden},
	}
	for _, tc := range cases {
		before := up.hits.Load()
		res, err := g.Call(context.Background(), c, e.input(tc.values))
		if tc.code != "" {
			require.Equal(t, tc.code, apperr.CodeOf(err), "%s: %v", tc.name, err)
			require.Equal(t, before, up.hits.Load(), "%s: nothing is sent", tc.name)
			continue
		}
		require.NoError(t, err, tc.name)
		require.Equal(t, 200, res.Status)
		got := up.last(t)
		require.Equal(t, tc.host, got.Host, tc.name)
		require.Equal(t, tc.uri, got.RequestURI, tc.name)
	}
}

func TestRepliesWhateverTheStatus(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	g := e.gateway(gateway.Options{})
	cases := []struct {
		name    string
		handler http.HandlerFunc
		want    string
	}{
		{"JSON", jsonReply(`{"id": 7, "tags": ["a"]}`), `{"status":200,"body":{"id":7,"tags":["a"]}}`},
		{"JSON error", func(w http.ResponseWriter, _ *http.Request) {
			w.WriteHeader(404)
			_, _ = w.Write([]byte(`{"error":"no such account"}`))
		}, `{"status":404,"body":{"error":"no such account"}}`},
		{"text", func(w http.ResponseWriter, _ *http.Request) {
			w.WriteHeader(503)
			_, _ = w.Write([]byte("down for maintenance"))
		}, `{"status":503,"text":"down for maintenance"}`},
		{"empty", func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(204) }, `{"status":204,"text":""}`},
		{"redirect, not followed", func(w http.ResponseWriter, _ *http.Request) {
			w.Header().Set("Location", "http://169.254.169.254/latest/meta-data/")
			w.WriteHeader(http.StatusFound)
			_, _ = w.Write([]byte("moved"))
		}, `{"status":302,"text":"moved"}`},
	}
	for _, tc := range cases {
		up := newUpstream(t, tc.handler)
		res, err := g.Call(context.Background(), call(up.URL+"/x"), e.input(nil))
		require.NoError(t, err, tc.name)
		raw, err := json.Marshal(res)
		require.NoError(t, err)
		require.Equal(t, tc.want, string(raw), tc.name)
		require.EqualValues(t, 1, up.hits.Load(), tc.name)
	}
}

// A redirect is the call's reply: its target, loopback or not, is never
// reached (the binding did not name it).
func TestRedirectToLoopbackIsNotFollowed(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	target := newUpstream(t, jsonReply(`{}`))
	front := newUpstream(t, func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, target.URL+"/internal", http.StatusTemporaryRedirect)
	})
	g := e.gateway(gateway.Options{})
	c := call(front.URL + "/x")
	c.Method = "POST"
	c.BodyTemplate = json.RawMessage(`{"a":1}`)
	res, err := g.Call(context.Background(), c, e.input(nil))
	require.NoError(t, err)
	require.Equal(t, 307, res.Status)
	require.Zero(t, target.hits.Load())
}

func TestBlockedAddressIs403AndNothingIsSent(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	up := newUpstream(t, jsonReply(`{}`))
	g := e.gateway(gateway.Options{Allow: []netip.Prefix{}})
	for _, u := range []string{up.URL + "/x", "http://localhost:" + up.port() + "/x", "http://169.254.169.254/latest/meta-data/"} {
		_, err := g.Call(context.Background(), call(u), e.input(nil))
		require.Equal(t, apperr.Forbidden, apperr.CodeOf(err), "%s: %v", u, err)
		require.True(t, gateway.IsBlockedCall(err))
		_, _, msg := apperr.Public(err)
		require.Equal(t, `http_call "lookup": the url resolves to a refused address`, msg)
	}
	require.Zero(t, up.hits.Load())
}

func TestTransportFailuresAre502WithoutDetail(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	slow := newUpstream(t, func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-r.Context().Done():
		case <-time.After(5 * time.Second):
		}
	})
	g := e.gateway(gateway.Options{Timeout: 200 * time.Millisecond})
	start := time.Now()
	_, err := g.Call(requestCtx("req-slow"), call(slow.URL+"/x"), e.input(nil))
	require.Less(t, time.Since(start), 3*time.Second, "the total timeout ends the call")
	require.Equal(t, apperr.BadGateway, apperr.CodeOf(err), "%v", err)
	_, _, msg := apperr.Public(err)
	require.Equal(t, `http_call "lookup": the upstream did not answer in time`, msg)

	closed := newUpstream(t, jsonReply(`{}`))
	closed.Close()
	_, err = g.Call(requestCtx("req-closed"), call(closed.URL+"/x"), e.input(nil))
	require.Equal(t, apperr.BadGateway, apperr.CodeOf(err))
	_, _, msg = apperr.Public(err)
	require.Equal(t, `http_call "lookup": the upstream could not be reached`, msg)
	require.Contains(t, e.log.String(), `"request_id":"req-closed"`, "the cause is logged with the request id")
	require.Contains(t, e.log.String(), "connection refused")
}

func TestHeadersAndBody(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	up := newUpstream(t, jsonReply(`{"ok":true}`))
	g := e.gateway(gateway.Options{})
	c := &bindingspec.HTTPCall{
		Op: "export", Method: "POST", URL: up.URL + "/tasks/{{task_id}}/export",
		Headers:              map[string]string{"X-Tenant": "{{tenant}}", "Accept-Encoding": "br", "X-Step": "{{step_id}}"},
		BodyTemplate:         json.RawMessage(`{"task":"{{task_id}}","name":"{{name}}","email":"{{email}}","items":[{"sku":"{{sku}}","note":"{{note}}"}],"amount":"{{amount}}"}`),
		PruneEmptyBodyFields: true,
	}
	values := map[string]any{"task_id": "spoofed", "step_id": "spoofed", "tenant": "acme", "name": "Ann \"A\"", "sku": "", "amount": json.Number("12.50")}
	res, err := g.Call(context.Background(), c, e.input(values))
	require.NoError(t, err)
	require.Equal(t, 200, res.Status)
	got := up.last(t)
	require.Equal(t, "POST", got.Method)
	require.Equal(t, "/tasks/task-1/export", got.RequestURI, "session keys come from the session")
	require.Equal(t, "acme", got.Header.Get("X-Tenant"))
	require.Equal(t, "step-1", got.Header.Get("X-Step"))
	require.Equal(t, "application/json", got.Header.Get("Content-Type"))
	require.Equal(t, gateway.UserAgent, got.Header.Get("User-Agent"))
	require.Equal(t, "gzip", got.Header.Get("Accept-Encoding"), "the transport negotiates compression")
	require.Equal(t, `{"task":"task-1","name":"Ann \"A\"","items":[{}],"amount":12.50}`, got.Body)

	values["tenant"] = "acme\r\nX-Admin: 1"
	before := up.hits.Load()
	_, err = g.Call(context.Background(), c, e.input(values))
	require.Equal(t, apperr.Invalid, apperr.CodeOf(err))
	require.Equal(t, before, up.hits.Load())
}

func TestIntegrationOfAnotherWorkspaceIs403(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	up := newUpstream(t, jsonReply(`{}`))
	g := e.gateway(gateway.Options{})
	other := e.integration(t, testkit.NewTenant(t, e.db).Workspace.ID, map[string]any{"bearer_token": "theirs"})
	mine := e.integration(t, e.tenant.Workspace.ID, map[string]any{"bearer_token": "mine"})

	c := call(up.URL + "/x")
	c.IntegrationID = other.ID
	c.Auth = &bindingspec.Auth{Kind: bindingspec.AuthBearer}
	_, err := g.Call(context.Background(), c, e.input(nil))
	require.Equal(t, apperr.Forbidden, apperr.CodeOf(err), "%v", err)
	c.Auth = nil // even with no auth, the integration must be the workspace's
	_, err = g.Call(context.Background(), c, e.input(nil))
	require.Equal(t, apperr.Forbidden, apperr.CodeOf(err), "%v", err)
	c.IntegrationID = "00000000-0000-0000-0000-000000000000"
	_, err = g.Call(context.Background(), c, e.input(nil))
	require.Equal(t, apperr.Forbidden, apperr.CodeOf(err), "%v", err)
	require.Zero(t, up.hits.Load())

	c.IntegrationID = mine.ID
	c.Auth = &bindingspec.Auth{Kind: bindingspec.AuthBearer}
	c.Headers = map[string]string{"Authorization": "Bearer {{spoof}}"}
	_, err = g.Call(context.Background(), c, e.input(map[string]any{"spoof": "x"}))
	require.NoError(t, err)
	require.Equal(t, "Bearer mine", up.last(t).Header.Get("Authorization"), "the integration's credentials win")
}

func TestBearerWithoutItsSecretIs502(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	up := newUpstream(t, jsonReply(`{}`))
	integ := e.integration(t, e.tenant.Workspace.ID, map[string]any{"dsn": "unrelated"})
	c := call(up.URL + "/x")
	c.IntegrationID = integ.ID
	c.Auth = &bindingspec.Auth{Kind: bindingspec.AuthBearer}
	_, err := e.gateway(gateway.Options{}).Call(context.Background(), c, e.input(nil))
	require.Equal(t, apperr.BadGateway, apperr.CodeOf(err))
	require.ErrorContains(t, err, `integration "crm" has no bearer_token secret`)
	require.Zero(t, up.hits.Load())
}
