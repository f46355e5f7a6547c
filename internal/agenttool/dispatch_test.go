package agenttool_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/appruntime/appruntime/internal/agenttool"
	"github.com/appruntime/appruntime/internal/apperr"
	"github.com/appruntime/appruntime/internal/config"
	"github.com/appruntime/appruntime/internal/gateway"
	"github.com/appruntime/appruntime/internal/testkit"
	"github.com/appruntime/appruntime/internal/tool"
	"github.com/appruntime/appruntime/models"
)

// loopback is what tests let the guarded client reach.
var loopback = []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}

const testIssuer = "appruntime-test"

func newSigner(t *testing.T, keys ...config.Key) *agenttool.IdentitySigner {
	t.Helper()
	if len(keys) == 0 {
		keys = []config.Key{{ID: "k1", Secret: testkit.TestKey}}
	}
	s, err := agenttool.NewIdentitySigner(keys, testIssuer)
	require.NoError(t, err)
	return s
}

// received is one request a stand-in component saw.
type received struct {
	method, path, query, auth, contentType, key string
	body                                        []byte
}

// standIn is a loopback component: it records each request and answers
// with reply.
type standIn struct {
	*httptest.Server
	mu   sync.Mutex
	seen []received
}

func newStandIn(t *testing.T, reply http.HandlerFunc) *standIn {
	t.Helper()
	s := &standIn{}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		s.mu.Lock()
		s.seen = append(s.seen, received{method: r.Method, path: r.URL.EscapedPath(), query: r.URL.RawQuery,
			auth: r.Header.Get("Authorization"), contentType: r.Header.Get("Content-Type"), key: r.Header.Get("X-Api-Key"), body: body})
		s.mu.Unlock()
		reply(w, r)
	}))
	t.Cleanup(s.Close)
	return s
}

func (s *standIn) requests() []received {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]received(nil), s.seen...)
}

func jsonReply(body string) http.HandlerFunc {
	return func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, body)
	}
}

// componentAt is a component of testWorkspace served by srv.
func componentAt(srv *standIn) agenttool.Component {
	return agenttool.Component{ID: "33333333-3333-3333-3333-333333333333", WorkspaceID: testWorkspace, Name: "api",
		BaseURL: srv.URL + "/base", Env: map[string]string{"API_KEY": "k-123"}}
}

func identity() agenttool.IdentityClaims {
	return agenttool.IdentityClaims{WorkspaceID: testWorkspace, AgentID: "agent-1", TaskID: "task-1", ToolCallID: "call-1", Tool: "save_bookmark"}
}

// TestAppTargetCarriesAVerifiableIdentity: an app target reaches its
// loopback component with the filled request and an identity token that
// verifies against the published JWKS with the expected claims; the token
// is for that component only.
func TestAppTargetCarriesAVerifiableIdentity(t *testing.T) {
	t.Parallel()
	srv := newStandIn(t, jsonReply(`{"content":"Saved Example","markdown":"**Saved**"}`))
	comp := componentAt(srv)
	signer := newSigner(t)
	d := agenttool.NewDispatcher(agenttool.DispatcherOptions{Allow: loopback, Signer: signer})
	target := agenttool.Target{Type: agenttool.TargetApp, Component: comp.ID, Path: "/tools/save/${input.title}", Method: "POST",
		Query: map[string]string{"v": "1"}, Headers: map[string]string{"X-Api-Key": "${env.API_KEY}"}, Body: json.RawMessage(`"${input}"`)}

	before := time.Now().Truncate(time.Second)
	reply, err := d.Dispatch(context.Background(), agenttool.Call{Target: target, Input: json.RawMessage(`{"url":"https://example.com","title":"Example"}`),
		Component: &comp, Identity: identity()})
	require.NoError(t, err)
	require.Equal(t, agenttool.Reply{Content: "Saved Example", Markdown: "**Saved**"}, reply)

	reqs := srv.requests()
	require.Len(t, reqs, 1)
	r := reqs[0]
	require.Equal(t, "POST", r.method)
	require.Equal(t, "/base/tools/save/Example", r.path)
	require.Equal(t, "v=1", r.query)
	require.Equal(t, "k-123", r.key)
	require.Equal(t, "application/json", r.contentType)
	require.JSONEq(t, `{"url":"https://example.com","title":"Example"}`, string(r.body))

	// The component verifies the token with the published key set.
	tok, ok := strings.CutPrefix(r.auth, "Bearer ")
	require.True(t, ok, "Authorization: Bearer <token>")
	jwks := roundTrip(t, signer.JWKS())
	claims, err := agenttool.VerifyIdentity(tok, jwks, testIssuer, comp.ID)
	require.NoError(t, err)
	require.Equal(t, identity(), claims)
	payload := tokenPayload(t, tok)
	require.Equal(t, "agent:agent-1", payload["sub"])
	exp, iat := int64(payload["exp"].(float64)), int64(payload["iat"].(float64))
	require.Equal(t, int64(agenttool.IdentityTTL/time.Second), exp-iat, "five minutes")
	require.GreaterOrEqual(t, iat, before.Unix())
	require.NotEmpty(t, payload["jti"])

	// Not for another component, another issuer, or a key set without its key.
	_, err = agenttool.VerifyIdentity(tok, jwks, testIssuer, apiComponent.ID)
	requireCode(t, err, apperr.Unauthenticated)
	_, err = agenttool.VerifyIdentity(tok, jwks, "someone-else", comp.ID)
	requireCode(t, err, apperr.Unauthenticated)
	_, err = agenttool.VerifyIdentity(tok, newSigner(t, config.Key{ID: "k1", Secret: bytes.Repeat([]byte{7}, 32)}).JWKS(), testIssuer, comp.ID)
	requireCode(t, err, apperr.Unauthenticated) // same kid, other key: the signature fails
	// A tampered payload fails.
	parts := strings.Split(tok, ".")
	forged := parts[0] + "." + strings.TrimRight(parts[1], "A") + "B." + parts[2]
	_, err = agenttool.VerifyIdentity(forged, jwks, testIssuer, comp.ID)
	requireCode(t, err, apperr.Unauthenticated)
}

// TestIdentityKeyRotation: a token minted before a rotation verifies with
// the new set, which still publishes the old key; the JWKS has EdDSA
// Ed25519 keys only.
func TestIdentityKeyRotation(t *testing.T) {
	t.Parallel()
	old := config.Key{ID: "old", Secret: testkit.TestKey}
	fresh := config.Key{ID: "new", Secret: bytes.Repeat([]byte{9}, 40)}
	before := newSigner(t, old)
	tok, err := before.Mint("comp", identity())
	require.NoError(t, err)
	after := newSigner(t, fresh, old)
	set := after.JWKS()
	require.Len(t, set.Keys, 2)
	require.Equal(t, "new", set.Keys[0].Kid, "the signing key comes first")
	for _, k := range set.Keys {
		require.Equal(t, agenttool.JWK{Kty: "OKP", Crv: "Ed25519", Kid: k.Kid, Use: "sig", Alg: "EdDSA", X: k.X}, k)
	}
	_, err = agenttool.VerifyIdentity(tok, set, testIssuer, "comp")
	require.NoError(t, err)
	require.Equal(t, before.JWKS().Keys[0], set.Keys[1], "the same secret derives the same key on every replica")

	for _, bad := range [][]config.Key{{{ID: "", Secret: testkit.TestKey}}, {{ID: "short", Secret: []byte("too short")}}, {old, old}} {
		_, err = agenttool.NewIdentitySigner(bad, testIssuer)
		require.Error(t, err)
	}
}

// TestNoIdentityKeys: without keys an app target is 501, not unsigned.
func TestNoIdentityKeys(t *testing.T) {
	t.Parallel()
	srv := newStandIn(t, jsonReply(`{"content":"x"}`))
	comp := componentAt(srv)
	signer, err := agenttool.NewIdentitySigner(nil, testIssuer)
	require.NoError(t, err)
	d := agenttool.NewDispatcher(agenttool.DispatcherOptions{Allow: loopback, Signer: signer})
	_, err = d.Dispatch(context.Background(), agenttool.Call{Target: agenttool.Target{Type: agenttool.TargetApp, Component: comp.ID, Path: "/t", Method: "POST"},
		Component: &comp, Identity: identity()})
	requireCode(t, err, apperr.NotImplemented)
	require.Empty(t, srv.requests(), "nothing was sent")
}

// TestURLTargetToAPrivateAddress: without the allow setting the guard
// refuses a loopback url target (403) and nothing reaches it; with it the
// call goes through, with no Authorization added.
func TestURLTargetToAPrivateAddress(t *testing.T) {
	t.Parallel()
	srv := newStandIn(t, func(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, "pong") })
	target := agenttool.Target{Type: agenttool.TargetURL, URL: srv.URL + "/ping", Method: "GET"}

	guarded := agenttool.NewDispatcher(agenttool.DispatcherOptions{Signer: newSigner(t)})
	_, err := guarded.Dispatch(context.Background(), agenttool.Call{Target: target, Identity: identity()})
	requireCode(t, err, apperr.Forbidden)
	require.True(t, agenttool.IsBlocked(err))
	require.Empty(t, srv.requests())

	allowed := agenttool.NewDispatcher(agenttool.DispatcherOptions{Allow: loopback, Signer: newSigner(t)})
	reply, err := allowed.Dispatch(context.Background(), agenttool.Call{Target: target, Identity: identity()})
	require.NoError(t, err)
	require.Equal(t, "pong", reply.Content)
	require.Empty(t, srv.requests()[0].auth, "a url target gets no identity token")
	require.Empty(t, srv.requests()[0].body, "no implicit body")
}

// TestEndpointFailuresDoNotEcho: an error status, a redirect, an oversized
// reply and a broken result are 502s without the endpoint's words, and the
// words are logged.
func TestEndpointFailuresDoNotEcho(t *testing.T) {
	t.Parallel()
	const secret = "internal stack trace at db.go:42"
	tests := []struct {
		name  string
		reply http.HandlerFunc
		want  string
	}{
		{"500", func(w http.ResponseWriter, _ *http.Request) { http.Error(w, secret, http.StatusInternalServerError) }, "answered 500"},
		{"404", func(w http.ResponseWriter, _ *http.Request) { http.Error(w, secret, http.StatusNotFound) }, "answered 404"},
		{"redirect", func(w http.ResponseWriter, r *http.Request) {
			http.Redirect(w, r, "http://127.0.0.1:1/"+strings.ReplaceAll(secret, " ", "-"), http.StatusFound)
		}, "redirect (302)"},
		{"over 1 MiB", func(w http.ResponseWriter, _ *http.Request) {
			_, _ = io.WriteString(w, strings.Repeat("a", gateway.MaxReplyBytes+1))
		}, "more than 1048576 bytes"},
		{"no content", jsonReply(`{"markdown":"` + secret + `"}`), "content is required"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			srv := newStandIn(t, tt.reply)
			comp := componentAt(srv)
			var logged bytes.Buffer
			var mu sync.Mutex
			d := agenttool.NewDispatcher(agenttool.DispatcherOptions{Allow: loopback, Signer: newSigner(t),
				Log: slog.New(slog.NewTextHandler(lockedWriter{&mu, &logged}, nil))})
			_, err := d.Dispatch(context.Background(), agenttool.Call{Target: agenttool.Target{Type: agenttool.TargetApp, Component: comp.ID, Path: "/t", Method: "POST"},
				Component: &comp, Identity: identity()})
			requireCode(t, err, apperr.BadGateway)
			_, _, msg := apperr.Public(err)
			require.Contains(t, msg, tt.want)
			require.NotContains(t, msg, "stack trace")
			require.Len(t, srv.requests(), 1, "a redirect is not followed")
			if tt.name != "over 1 MiB" {
				mu.Lock()
				require.Contains(t, logged.String(), "stack", "the endpoint's words are logged")
				mu.Unlock()
			}
		})
	}
}

type lockedWriter struct {
	mu *sync.Mutex
	w  io.Writer
}

func (l lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

// TestComponentOfAnotherWorkspaceIsNotCalled: a component loaded from
// another workspace than the identity's is never sent to.
func TestComponentOfAnotherWorkspaceIsNotCalled(t *testing.T) {
	t.Parallel()
	srv := newStandIn(t, jsonReply(`{"content":"x"}`))
	comp := componentAt(srv)
	comp.WorkspaceID = "00000000-0000-0000-0000-0000000000bb"
	d := agenttool.NewDispatcher(agenttool.DispatcherOptions{Allow: loopback, Signer: newSigner(t)})
	_, err := d.Dispatch(context.Background(), agenttool.Call{Target: agenttool.Target{Type: agenttool.TargetApp, Component: comp.ID, Path: "/t", Method: "POST"},
		Component: &comp, Identity: identity()})
	require.Error(t, err)
	require.Empty(t, srv.requests())
}

// TestPendingCardFromAComponent: a component's card parks with its app
// buttons bound to that component.
func TestPendingCardFromAComponent(t *testing.T) {
	t.Parallel()
	srv := newStandIn(t, jsonReply(card(`[{"type":"button","id":"connect","label":"Connect","input":{"scope":"s"},"target":{"type":"app","path":"/oauth/start","method":"POST","body":"${input}"}}]`)))
	comp := componentAt(srv)
	d := agenttool.NewDispatcher(agenttool.DispatcherOptions{Allow: loopback, Signer: newSigner(t)})
	reply, err := d.Dispatch(context.Background(), agenttool.Call{Target: agenttool.Target{Type: agenttool.TargetApp, Component: comp.ID, Path: "/t", Method: "POST"},
		Component: &comp, Identity: identity(), Check: agenttool.CheckOptions{WorkspaceID: testWorkspace, Components: components{comp.ID: comp}}})
	require.NoError(t, err)
	require.Equal(t, agenttool.DisplayPending, reply.Display())
	run, err := reply.Pending.Click("connect")
	require.NoError(t, err)
	require.Equal(t, comp.ID, run.Target.Component)

	// The click runs the button's target against the same component.
	srv2 := newStandIn(t, func(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, "connected") })
	comp.BaseURL = srv2.URL
	clicked, err := d.Dispatch(context.Background(), agenttool.Call{Target: *run.Target, Input: run.Button.Input, Component: &comp, Identity: identity()})
	require.NoError(t, err)
	require.Equal(t, "connected", clicked.Content)
	require.JSONEq(t, `{"scope":"s"}`, string(srv2.requests()[0].body))
}

// TestBuiltinTarget runs a builtin through the executors' Set.
func TestBuiltinTarget(t *testing.T) {
	t.Parallel()
	var got tool.Call
	set := tool.Set{models.BaseTranslateText: tool.Func(func(_ context.Context, c tool.Call) (tool.Result, error) {
		got = c
		return tool.Result{Output: json.RawMessage(`{"texts":["hola"]}`)}, nil
	})}
	d := agenttool.NewDispatcher(agenttool.DispatcherOptions{Builtins: set})
	agent := models.Agent{ID: "agent-1", DocumentTranslationEnabled: true}
	reply, err := d.Dispatch(context.Background(), agenttool.Call{Target: agenttool.Target{Type: agenttool.TargetBuiltin, Name: models.BaseTranslateText},
		Input: json.RawMessage(`{"texts":["hello"],"target_language":"es"}`), Agent: agent})
	require.NoError(t, err)
	require.Equal(t, `{"texts":["hola"]}`, reply.Content)
	require.Equal(t, models.BaseTranslateText, got.BaseTool)
	require.Equal(t, agent, got.Agent)

	_, err = agenttool.NewDispatcher(agenttool.DispatcherOptions{}).Dispatch(context.Background(),
		agenttool.Call{Target: agenttool.Target{Type: agenttool.TargetBuiltin, Name: models.BaseTranslateText}})
	requireCode(t, err, apperr.NotImplemented)
}

// roundTrip sends v through JSON, as a component fetching the JWKS would.
func roundTrip(t *testing.T, set agenttool.JWKS) agenttool.JWKS {
	t.Helper()
	var out agenttool.JWKS
	require.NoError(t, json.Unmarshal(mustJSON(t, set), &out))
	return out
}

func tokenPayload(t *testing.T, tok string) map[string]any {
	t.Helper()
	parts := strings.Split(tok, ".")
	require.Len(t, parts, 3)
	raw, err := base64.RawURLEncoding.DecodeString(parts[1])
	require.NoError(t, err)
	var m map[string]any
	require.NoError(t, json.Unmarshal(raw, &m))
	return m
}
