package gateway_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/netip"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/appruntime/appruntime/internal/apperr"
	"github.com/appruntime/appruntime/internal/bindingspec"
	"github.com/appruntime/appruntime/internal/gateway"
)

// tokenServer is a local OAuth2 token endpoint issuing tok-1, tok-2, …
type tokenServer struct {
	*upstream
	issued atomic.Int32
	mu     sync.Mutex
	forms  []url.Values
	basic  []string
	// fail, when set, answers every grant with this status and body.
	fail     int
	failBody string
	// expiresIn is the lifetime of issued tokens (0: none given).
	expiresIn int
}

func newTokenServer(t *testing.T) *tokenServer {
	t.Helper()
	ts := &tokenServer{}
	ts.upstream = newUpstream(t, func(w http.ResponseWriter, r *http.Request) {
		_ = r.ParseForm()
		form := r.PostForm
		id, secret, _ := r.BasicAuth()
		ts.mu.Lock()
		ts.forms = append(ts.forms, form)
		ts.basic = append(ts.basic, id+":"+secret)
		ts.mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		if ts.fail != 0 {
			w.WriteHeader(ts.fail)
			_, _ = w.Write([]byte(ts.failBody))
			return
		}
		n := ts.issued.Add(1)
		reply := map[string]any{"access_token": fmt.Sprintf("tok-%d", n), "token_type": "bearer"}
		if ts.expiresIn > 0 {
			reply["expires_in"] = ts.expiresIn
		}
		_ = json.NewEncoder(w).Encode(reply)
	})
	return ts
}

// tokenUpstream answers 200 to the tokens accept allows and 401 to others,
// echoing the request body so a replay can be checked.
func tokenUpstream(t *testing.T, accept func(token string) bool) *upstream {
	t.Helper()
	return newUpstream(t, func(w http.ResponseWriter, r *http.Request) {
		tok := strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ")
		if !accept(tok) {
			w.WriteHeader(http.StatusUnauthorized)
			_, _ = w.Write([]byte("UPSTREAM-SECRET-WORDS: token " + tok + " rejected"))
			return
		}
		_, _ = w.Write([]byte(`{"token":"` + tok + `"}`))
	})
}

// oauthCall is a POST with a body, authenticated by kind through integ.
func oauthCall(upURL, tokenURL, integrationID, kind string) *bindingspec.HTTPCall {
	return &bindingspec.HTTPCall{
		Op: "lookup_account", Method: "POST", URL: upURL + "/accounts/search", IntegrationID: integrationID,
		Auth:         &bindingspec.Auth{Kind: kind, TokenURL: tokenURL},
		BodyTemplate: json.RawMessage(`{"name":"{{name}}"}`),
	}
}

var clientSecrets = map[string]any{"oauth_config": map[string]any{"client_id": "app", "client_secret": "s3cret", "scope": "accounts.read"}}

func TestA401RefetchesOnceAndReplaysTheBody(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ts := newTokenServer(t)
	up := tokenUpstream(t, func(tok string) bool { return tok == "tok-2" }) // the first token is refused
	integ := e.integration(t, e.tenant.Workspace.ID, clientSecrets)
	g := e.gateway(gateway.Options{})

	res, err := g.Call(context.Background(), oauthCall(up.URL, ts.URL+"/token", integ.ID, bindingspec.AuthClientCredentials),
		e.input(map[string]any{"name": "ACME"}))
	require.NoError(t, err)
	require.Equal(t, 200, res.Status)
	require.JSONEq(t, `{"token":"tok-2"}`, string(res.Body))
	require.EqualValues(t, 2, ts.issued.Load(), "two token fetches")
	require.EqualValues(t, 2, up.hits.Load(), "two upstream calls")
	require.Equal(t, `{"name":"ACME"}`, up.reqs[0].Body)
	require.Equal(t, up.reqs[0].Body, up.reqs[1].Body, "the body is replayed")
	require.Equal(t, "Bearer tok-1", up.reqs[0].Header.Get("Authorization"))
	require.Equal(t, "Bearer tok-2", up.reqs[1].Header.Get("Authorization"))

	// The grant: client credentials with HTTP Basic and the secret's scope.
	require.Equal(t, "client_credentials", ts.forms[0].Get("grant_type"))
	require.Equal(t, "accounts.read", ts.forms[0].Get("scope"))
	require.Equal(t, "app:s3cret", ts.basic[0])

	// The fresh token is cached: the next call fetches none.
	_, err = g.Call(context.Background(), oauthCall(up.URL, ts.URL+"/token", integ.ID, bindingspec.AuthClientCredentials),
		e.input(map[string]any{"name": "ACME"}))
	require.NoError(t, err)
	require.EqualValues(t, 2, ts.issued.Load())
	require.EqualValues(t, 3, up.hits.Load())
}

func TestTwo401sAreAnErrorWithoutAThirdCall(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ts := newTokenServer(t)
	up := tokenUpstream(t, func(string) bool { return false })
	integ := e.integration(t, e.tenant.Workspace.ID, clientSecrets)
	g := e.gateway(gateway.Options{})

	_, err := g.Call(requestCtx("req-401"), oauthCall(up.URL, ts.URL+"/token", integ.ID, bindingspec.AuthClientCredentials),
		e.input(map[string]any{"name": "ACME"}))
	require.Equal(t, apperr.BadGateway, apperr.CodeOf(err), "%v", err)
	require.EqualValues(t, 2, up.hits.Load(), "no third call")
	require.EqualValues(t, 2, ts.issued.Load())
	_, _, msg := apperr.Public(err)
	require.Equal(t, `http_call "lookup_account": the upstream refused the integration's token twice (401)`, msg)
	require.NotContains(t, err.Error(), "UPSTREAM-SECRET-WORDS", "the upstream's words are never in the error")
	log := e.log.String()
	require.Contains(t, log, "UPSTREAM-SECRET-WORDS", "they are logged")
	require.Contains(t, log, `"request_id":"req-401"`)
}

func TestFiftyConcurrent401sRefetchOnce(t *testing.T) {
	t.Parallel()
	const n = 50
	e := newEnv(t)
	ts := newTokenServer(t)
	// Once revoked, tok-1 is answered 401 only after all fifty requests
	// carrying it have arrived: fifty truly concurrent 401s.
	var revoked atomic.Bool
	var refused atomic.Int32
	all := make(chan struct{})
	up := tokenUpstream(t, func(tok string) bool {
		if !revoked.Load() || tok != "tok-1" {
			return true
		}
		if refused.Add(1) == n {
			close(all)
		}
		select {
		case <-all:
		case <-time.After(10 * time.Second):
		}
		return false
	})
	integ := e.integration(t, e.tenant.Workspace.ID, clientSecrets)
	g := e.gateway(gateway.Options{})
	c := oauthCall(up.URL, ts.URL+"/token", integ.ID, bindingspec.AuthClientCredentials)

	_, err := g.Call(context.Background(), c, e.input(map[string]any{"name": "warm"}))
	require.NoError(t, err)
	require.EqualValues(t, 1, ts.issued.Load())
	revoked.Store(true)

	var wg sync.WaitGroup
	statuses := make([]int, n)
	errs := make([]error, n)
	for i := range n {
		wg.Go(func() {
			res, err := g.Call(context.Background(), c, e.input(map[string]any{"name": fmt.Sprint(i)}))
			statuses[i], errs[i] = res.Status, err
		})
	}
	wg.Wait()
	for i := range n {
		require.NoError(t, errs[i])
		require.Equal(t, 200, statuses[i])
	}
	require.EqualValues(t, n, refused.Load(), "all fifty were refused")
	require.EqualValues(t, 1+2*n, up.hits.Load(), "and each was sent once more")
	// The issue asks for at most two refetches; compare-and-delete and a
	// cache check inside the flight make it exactly one.
	require.EqualValues(t, 1, ts.issued.Load()-1, "fifty 401s on one token cause one refetch, not fifty")
}

func TestTokensAreCachedPerScopeAndCredential(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ts := newTokenServer(t)
	up := tokenUpstream(t, func(string) bool { return true })
	integ := e.integration(t, e.tenant.Workspace.ID, clientSecrets)
	g := e.gateway(gateway.Options{})
	c := oauthCall(up.URL, ts.URL+"/token", integ.ID, bindingspec.AuthClientCredentials)
	send := func() string {
		t.Helper()
		res, err := g.Call(context.Background(), c, e.input(map[string]any{"name": "x"}))
		require.NoError(t, err)
		var body struct{ Token string }
		require.NoError(t, json.Unmarshal(res.Body, &body))
		return body.Token
	}
	require.Equal(t, "tok-1", send())
	require.Equal(t, "tok-1", send(), "cached")

	c.Auth.Scope = "accounts.write"
	require.Equal(t, "tok-2", send(), "another scope, another token")
	require.Equal(t, "accounts.write", ts.forms[1].Get("scope"), "the call's scope wins over the secret's")
	c.Auth.Scope = ""
	require.Equal(t, "tok-1", send())

	e.rotate(t, integ.ID, map[string]any{"oauth_config": map[string]any{"client_id": "app", "client_secret": "rotated", "scope": "accounts.read"}})
	require.Equal(t, "tok-3", send(), "a rotated secret mints a new token")
	require.Equal(t, "app:rotated", ts.basic[2])
	require.Equal(t, "tok-3", send())

	other := e.integration(t, e.tenant.Workspace.ID, clientSecrets)
	c.IntegrationID = other.ID
	require.Equal(t, "tok-4", send(), "per integration")
}

func TestExpiredTokensAreRefetched(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ts := newTokenServer(t)
	ts.expiresIn = 5 // inside oauth2's expiry margin: stale at once
	up := tokenUpstream(t, func(string) bool { return true })
	integ := e.integration(t, e.tenant.Workspace.ID, clientSecrets)
	g := e.gateway(gateway.Options{})
	c := oauthCall(up.URL, ts.URL+"/token", integ.ID, bindingspec.AuthClientCredentials)
	for range 3 {
		_, err := g.Call(context.Background(), c, e.input(map[string]any{"name": "x"}))
		require.NoError(t, err)
	}
	require.EqualValues(t, 3, ts.issued.Load())
}

func TestPasswordGrant(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ts := newTokenServer(t)
	up := tokenUpstream(t, func(string) bool { return true })
	integ := e.integration(t, e.tenant.Workspace.ID, map[string]any{"oauth_config": map[string]any{"username": "svc", "password": "pw"}})
	g := e.gateway(gateway.Options{})
	c := oauthCall(up.URL, ts.URL+"/token", integ.ID, bindingspec.AuthOAuth2Password)
	c.Auth.Scope = "a b"
	res, err := g.Call(context.Background(), c, e.input(map[string]any{"name": "x"}))
	require.NoError(t, err)
	require.Equal(t, 200, res.Status)
	form := ts.forms[0]
	require.Equal(t, "password", form.Get("grant_type"))
	require.Equal(t, "svc", form.Get("username"))
	require.Equal(t, "pw", form.Get("password"))
	require.Equal(t, "a b", form.Get("scope"))
	require.Equal(t, ":", ts.basic[0], "a public client sends no Basic credentials")
}

func TestTokenFailures(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	up := tokenUpstream(t, func(string) bool { return true })
	integ := e.integration(t, e.tenant.Workspace.ID, clientSecrets)

	ts := newTokenServer(t)
	ts.fail, ts.failBody = 400, `{"error":"invalid_client","error_description":"TOKEN-ENDPOINT-WORDS"}`
	g := e.gateway(gateway.Options{})
	_, err := g.Call(requestCtx("req-token"), oauthCall(up.URL, ts.URL+"/token", integ.ID, bindingspec.AuthClientCredentials), e.input(map[string]any{"name": "x"}))
	require.Equal(t, apperr.BadGateway, apperr.CodeOf(err))
	_, _, msg := apperr.Public(err)
	require.Equal(t, `http_call "lookup_account": could not obtain a token from the token URL`, msg)
	require.NotContains(t, err.Error(), "TOKEN-ENDPOINT-WORDS")
	require.Contains(t, e.log.String(), "TOKEN-ENDPOINT-WORDS")
	require.EqualValues(t, 1, ts.hits.Load(), "one grant request: the auth style is not probed")

	// A token endpoint that redirects is not followed: credentials stay put.
	moved := newUpstream(t, func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, ts.URL+"/token", http.StatusTemporaryRedirect)
	})
	_, err = g.Call(context.Background(), oauthCall(up.URL, moved.URL+"/token", integ.ID, bindingspec.AuthClientCredentials), e.input(map[string]any{"name": "x"}))
	require.Equal(t, apperr.BadGateway, apperr.CodeOf(err))
	require.EqualValues(t, 1, ts.hits.Load())

	// A token URL on a refused address is a 403, and nothing reaches it.
	blocked := newTokenServer(t)
	gb := e.gateway(gateway.Options{Allow: []netip.Prefix{netip.MustParsePrefix("127.0.0.1/32")}})
	tokenURL := strings.Replace(blocked.URL, "127.0.0.1", "127.0.0.2", 1) + "/token"
	_, err = gb.Call(context.Background(), oauthCall(up.URL, tokenURL, integ.ID, bindingspec.AuthClientCredentials), e.input(map[string]any{"name": "x"}))
	require.Equal(t, apperr.Forbidden, apperr.CodeOf(err), "%v", err)
	require.True(t, gateway.IsBlockedCall(err))
	require.Zero(t, blocked.hits.Load())
	require.Zero(t, up.hits.Load(), "no token, no upstream call")

	// An integration without oauth_config.
	bare := e.integration(t, e.tenant.Workspace.ID, map[string]any{"bearer_token": "x"})
	_, err = g.Call(context.Background(), oauthCall(up.URL, ts.URL+"/token", bare.ID, bindingspec.AuthClientCredentials), e.input(map[string]any{"name": "x"}))
	require.Equal(t, apperr.BadGateway, apperr.CodeOf(err))
	require.ErrorContains(t, err, `integration "crm" has no oauth_config secret`)
}
