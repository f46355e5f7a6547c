package sdk_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"

	"github.com/appruntime/appruntime/internal/bundle"
	"github.com/appruntime/appruntime/internal/sdk"
	"github.com/appruntime/appruntime/internal/testkit/browser"
)

// sessionTTL is the stand-in mint's token lifetime, short so that the test
// bundle outlives its first token within seconds. The SDK renews at three
// quarters of a lifetime this short.
const sessionTTL = 4 * time.Second

// standIn plays the runtime API and the mint: tokens with an expiry, and the
// verbs speaking the real v2 envelope, 429 with Retry-After included. It
// records every call.
type standIn struct {
	mu     sync.Mutex
	tokens map[string]time.Time // token → expiry
	mints  []time.Time
	calls  []runtimeCall
}

type runtimeCall struct {
	Verb, Op, Token string
	At              time.Time
	Status          int
}

func (s *standIn) mint(w http.ResponseWriter, _ *http.Request) {
	s.mu.Lock()
	now := time.Now()
	token := fmt.Sprintf("tok-%d", len(s.mints)+1)
	s.mints = append(s.mints, now)
	s.tokens[token] = now.Add(sessionTTL)
	s.mu.Unlock()
	writeJSON(w, http.StatusOK, map[string]any{"session_token": token, "expires_at": now.Add(sessionTTL).UTC().Format(time.RFC3339Nano)})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

func fail(status int, message string) map[string]any {
	return map[string]any{"ok": false, "error": map[string]any{"status": status, "message": message}}
}

// runtime answers /api/app-runtime/{verb} as the API does for a bundle: CORS
// for an opaque origin, the bearer token checked, v2 envelopes.
func (s *standIn) runtime(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Access-Control-Allow-Origin", "*")
	w.Header().Set("Access-Control-Expose-Headers", "Retry-After, X-Request-Id")
	if r.Method == http.MethodOptions {
		w.Header().Set("Access-Control-Allow-Methods", "POST, OPTIONS")
		w.Header().Set("Access-Control-Allow-Headers", "Authorization, Content-Type, X-Request-Id, X-Nanonets-App-Runtime")
		w.WriteHeader(http.StatusNoContent)
		return
	}
	var req struct {
		Op      string         `json:"op"`
		Payload map[string]any `json:"payload"`
		AwaitID string         `json:"await_id"`
	}
	_ = json.NewDecoder(r.Body).Decode(&req)
	token := strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ")
	now := time.Now()

	s.mu.Lock()
	call := runtimeCall{Verb: strings.TrimPrefix(r.URL.Path, "/api/app-runtime/"), Op: req.Op, Token: token, At: now}
	seen := 0
	for _, c := range s.calls {
		if c.Op == req.Op {
			seen++
		}
	}
	expiry, known := s.tokens[token]
	status := http.StatusOK
	var body map[string]any
	switch {
	case r.Header.Get("X-Nanonets-App-Runtime") != "v2":
		status, body = http.StatusBadRequest, map[string]any{"error": "this stand-in speaks v2 only"}
	case !known || !now.Before(expiry):
		status, body = http.StatusUnauthorized, fail(401, "missing or expired session token")
	case req.Op == "list_invoices":
		body = map[string]any{"ok": true, "kind": "rows", "result": map[string]any{
			"kind": "rows", "columns": []string{"id", "vendor"}, "rows": [][]any{{1, "ACME Corp"}}, "row_count": 1, "next_cursor": nil}}
	case req.Op == "limited_lookup" && seen == 0:
		w.Header().Set("Retry-After", "1")
		status, body = http.StatusTooManyRequests, fail(429, "this surface is calling faster than 5/s")
	case req.Op == "limited_lookup":
		body = map[string]any{"ok": true, "kind": "http", "result": map[string]any{"kind": "http", "status": 200, "body": map[string]any{"found": true}}}
	case req.Op == "always_limited":
		w.Header().Set("Retry-After", "0")
		status, body = http.StatusTooManyRequests, fail(429, "this surface is calling faster than 5/s")
	case req.Op == "approve" && req.AwaitID == "await-1" && req.Payload["reason"] == "matches the PO" && req.Payload["rows"] != nil:
		// the reason option travels as payload.reason, beside the rows
		body = map[string]any{"ok": true, "kind": "action", "result": map[string]any{"results": map[string]any{"await_resolved": true}, "responses": map[string]any{}}}
	default:
		status, body = http.StatusForbidden, fail(403, fmt.Sprintf("op %q is not allowed by the binding", req.Op))
	}
	call.Status = status
	s.calls = append(s.calls, call)
	s.mu.Unlock()
	writeJSON(w, status, body)
}

// render fills a testdata page's {{NAME}} placeholders.
func render(t *testing.T, name string, values map[string]string) string {
	t.Helper()
	b, err := os.ReadFile("testdata/" + name)
	require.NoError(t, err)
	page := string(b)
	for k, v := range values {
		page = strings.ReplaceAll(page, "{{"+k+"}}", v)
	}
	return page
}

// TestABundleOnTheSDKInChromium mounts a test bundle on the SDK in a real
// browser: the API origin serves the SDK, the bundle (under the bundle CSP,
// as the API serves bundles) and a stand-in runtime; a reference host page
// on another origin mounts the bundle in <iframe sandbox="allow-scripts">,
// answers ready with init and renew_session with a fresh mint. The bundle
// reads, is rate limited, is refused, acts, uses the bridge, and outlives
// its first token.
func TestABundleOnTheSDKInChromium(t *testing.T) {
	t.Parallel()
	ctx := browser.New(t)
	s := &standIn{tokens: map[string]time.Time{}}

	apiMux := http.NewServeMux()
	api := httptest.NewServer(apiMux)
	t.Cleanup(api.Close)
	bundleURL := api.URL + "/bundles/b1/1"
	apiMux.Handle("GET "+sdk.Path, sdk.Handler())
	apiMux.HandleFunc("/api/app-runtime/", s.runtime)
	apiMux.HandleFunc("GET /bundles/b1/1", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		w.Header().Set("Content-Security-Policy", bundle.ContentSecurityPolicy(api.URL, api.URL+"/bundles"))
		_, _ = w.Write([]byte(render(t, "bundle.html", map[string]string{"SDK_URL": api.URL + sdk.Path})))
	})

	hostMux := http.NewServeMux()
	host := httptest.NewServer(hostMux)
	t.Cleanup(host.Close)
	hostMux.HandleFunc("POST /mint", s.mint)
	hostMux.HandleFunc("GET /host.html", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		_, _ = w.Write([]byte(render(t, "host.html", map[string]string{"BUNDLE_URL": bundleURL, "API_BASE": api.URL + "/api/app-runtime"})))
	})

	require.NoError(t, chromedp.Do(ctx,
		chromedp.Navigate(host.URL+"/host.html"),
		browser.Poll(`window.results !== null`, 45*time.Second),
	))
	resultsJSON, err := chromedp.Run(ctx, chromedp.Evaluate[string](`JSON.stringify(window.results)`))
	require.NoError(t, err)
	logJSON, err := chromedp.Run(ctx, chromedp.Evaluate[string](`JSON.stringify(window.hostLog)`))
	require.NoError(t, err)
	var results struct {
		Error   string `json:"error"`
		Done    bool   `json:"done"`
		Version string `json:"version"`
		Init    struct {
			Params  map[string]any `json:"params"`
			AwaitID string         `json:"awaitId"`
			APIBase string         `json:"apiBase"`
		} `json:"init"`
		Grants                map[string]bool `json:"grants"`
		First                 map[string]any  `json:"first"`
		Limited               map[string]any  `json:"limited"`
		LimitedMS             float64         `json:"limitedMs"`
		Action                map[string]any  `json:"action"`
		AfterExpiry           map[string]any  `json:"afterExpiry"`
		Renewals              int             `json:"renewals"`
		RenewedExpiry         bool            `json:"renewedExpiry"`
		HostState             string          `json:"hostState"`
		Selection             map[string]any  `json:"selection"`
		Exhausted             thrown          `json:"exhausted"`
		Denied                thrown          `json:"denied"`
		NotGranted            thrown          `json:"notGranted"`
		CitationWithoutTarget thrown          `json:"citationWithoutTarget"`
		CitationLongLabel     thrown          `json:"citationLongLabel"`
		CitationBadPage       thrown          `json:"citationBadPage"`
		CitationError         map[string]any  `json:"citationError"`
		Split                 map[string]any  `json:"split"`
		SplitBadRanges        thrown          `json:"splitBadRanges"`
	}
	require.NoError(t, json.Unmarshal([]byte(resultsJSON), &results), resultsJSON)
	require.Empty(t, results.Error)
	require.True(t, results.Done, resultsJSON)
	s.mu.Lock()
	calls, mints := append([]runtimeCall(nil), s.calls...), append([]time.Time(nil), s.mints...)
	s.mu.Unlock()

	// The handshake: init's values reach the bundle.
	require.Equal(t, "1", results.Version)
	require.Equal(t, map[string]any{"report_id": float64(59137)}, results.Init.Params)
	require.Equal(t, "await-1", results.Init.AwaitID)
	require.Equal(t, api.URL+"/api/app-runtime", results.Init.APIBase)
	require.Equal(t, map[string]bool{"list_files": true, "next_review_task": false, "hostDocumentSelection": true, "hostListFiles": false}, results.Grants)

	// Verbs return the envelope's result.
	require.Equal(t, "rows", results.First["kind"])
	require.Equal(t, float64(1), results.First["row_count"])
	require.Equal(t, map[string]any{"await_resolved": true}, results.Action["results"], "the action carried await_id and its reason in the payload")

	// A 429 is retried after Retry-After, and only then.
	require.Equal(t, "http", results.Limited["kind"])
	limited := callsOf(calls, "limited_lookup")
	require.Len(t, limited, 2)
	require.Equal(t, http.StatusTooManyRequests, limited[0].Status)
	require.Equal(t, http.StatusOK, limited[1].Status)
	require.GreaterOrEqual(t, limited[1].At.Sub(limited[0].At), time.Second, "the retry waited the Retry-After")
	require.GreaterOrEqual(t, results.LimitedMS, 1000.0)
	// Retries are bounded: maxRetries 2 is three calls, then the 429 is thrown.
	require.Len(t, callsOf(calls, "always_limited"), 3)
	require.Equal(t, thrown{Thrown: true, Typed: true, Name: "AppRuntimeError", Status: 429, Message: "this surface is calling faster than 5/s"}, results.Exhausted)

	// Other failures are typed errors with the envelope's status and message.
	require.Equal(t, thrown{Thrown: true, Typed: true, Name: "AppRuntimeError", Status: 403, Message: `op "not_allowed" is not allowed by the binding`}, results.Denied)
	require.Len(t, callsOf(calls, "not_allowed"), 1, "a 403 is not retried")

	// The bridge: what the host received, and what the bundle heard back.
	var hostLog []map[string]any
	require.NoError(t, json.Unmarshal([]byte(logJSON), &hostLog))
	var bridge []map[string]any
	var renewAt []time.Time
	var mcpApps []string
	var runtimeErrors []map[string]any
	for _, m := range hostLog {
		at := time.UnixMilli(int64(m["at"].(float64)))
		delete(m, "at")
		if m["jsonrpc"] == "2.0" {
			// connect() also asked the MCP Apps handshake, which this host,
			// like ours, leaves unanswered.
			mcpApps = append(mcpApps, m["method"].(string))
			continue
		}
		switch m["type"] {
		case "renew_session":
			renewAt = append(renewAt, at)
		case "ready", "test_results":
		case "runtime_error":
			runtimeErrors = append(runtimeErrors, m)
		default:
			bridge = append(bridge, m)
		}
	}
	require.Equal(t, []map[string]any{
		{"type": "runtime_error", "verb": "run", "op": "always_limited", "status": float64(429), "message": "this surface is calling faster than 5/s"},
		{"type": "runtime_error", "verb": "write", "op": "not_allowed", "status": float64(403), "message": `op "not_allowed" is not allowed by the binding`},
	}, runtimeErrors, "each call that finally failed is told to the host, once, after the SDK's retries")
	require.Equal(t, []map[string]any{
		{"type": "set_selection_mode", "enabled": true},
		{"type": "open_citation", "citation_ids": []any{float64(3), float64(4)}, "label": "Line 2", "file_name": "invoice.pdf"},
		{"type": "open_citation", "source_page": float64(7)},
		{"type": "abort_review_task"},
		{"type": "open_citation", "citation_ids": []any{float64(404)}},
		{"type": "open_split", "file_id": "file-1", "ranges": []any{map[string]any{"from": float64(1), "to": float64(2)}, map[string]any{"from": float64(3), "to": float64(4)}}},
	}, bridge, "invalid citations, splits and ungranted requests never reach the host")
	require.Equal(t, map[string]any{"type": "citation_error", "citation_ids": []any{float64(404)}, "message": "unknown citation id 404"}, results.CitationError)
	require.Equal(t, map[string]any{"file_id": "file-1", "ranges": []any{map[string]any{"from": float64(1), "to": float64(1)}, map[string]any{"from": float64(2), "to": float64(4)}}},
		results.Split, "openSplit resolves with the split the reviewer confirmed, not another file's cancel")
	require.Equal(t, 400, results.SplitBadRanges.Status)
	require.Contains(t, results.SplitBadRanges.Message, "open_split")
	require.Equal(t, []string{"ui/initialize"}, mcpApps, "unanswered, ui/initialize is all of the MCP Apps bridge a host of ours hears")
	require.Equal(t, "text", results.HostState)
	require.Equal(t, map[string]any{"text": "ACME Corp", "page": float64(2), "label": "vendor"}, results.Selection)
	for _, e := range []thrown{results.CitationWithoutTarget, results.CitationLongLabel, results.CitationBadPage} {
		require.True(t, e.Thrown && e.Typed, "%+v", e)
		require.Equal(t, 400, e.Status)
		require.Contains(t, e.Message, "open_citation")
	}
	require.Equal(t, thrown{Thrown: true, Typed: true, Name: "AppRuntimeError", Status: 403, Message: "the binding does not grant next_review_task"}, results.NotGranted)

	// The session outlived its first token: renewed through the host before
	// it expired, so no call was ever answered 401.
	require.GreaterOrEqual(t, len(mints), 2)
	firstExpiry := mints[0].Add(sessionTTL)
	require.NotEmpty(t, renewAt)
	require.True(t, renewAt[0].Before(firstExpiry), "renewal asked at %s, token expired at %s", renewAt[0], firstExpiry)
	require.GreaterOrEqual(t, results.Renewals, 1)
	require.True(t, results.RenewedExpiry)
	require.Equal(t, "rows", results.AfterExpiry["kind"])
	last := callsOf(calls, "list_invoices")
	require.Len(t, last, 2)
	require.Equal(t, "tok-1", last[0].Token)
	require.True(t, last[1].At.After(firstExpiry), "the last read came after the first token expired")
	require.NotEqual(t, "tok-1", last[1].Token)
	for _, c := range calls {
		require.NotEqual(t, http.StatusUnauthorized, c.Status, "%+v", c)
		require.NotEqual(t, http.StatusBadRequest, c.Status, "every call sends X-Nanonets-App-Runtime: v2: %+v", c)
	}
}

// thrown is what the test bundle records of a call that should throw.
type thrown struct {
	Thrown  bool   `json:"thrown"`
	Typed   bool   `json:"typed"`
	Name    string `json:"name"`
	Status  int    `json:"status"`
	Message string `json:"message"`
}

func callsOf(calls []runtimeCall, op string) []runtimeCall {
	var out []runtimeCall
	for _, c := range calls {
		if c.Op == op {
			out = append(out, c)
		}
	}
	return out
}
