package appblock_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"

	"github.com/appruntime/appruntime/internal/appblock"
	"github.com/appruntime/appruntime/internal/testkit/browser"
)

// The three blocks of testdata/host-test.js.
const (
	assetA = "ast_01JAPPA0000000000000000000"
	assetB = "ast_01JAPPB0000000000000000000"
	assetC = "ast_01JAPPC0000000000000000000"
)

// hostPageCSP is the policy of the test host page, shaped like the
// console's: scripts from itself only, frames from itself only.
const hostPageCSP = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; " +
	"frame-src 'self'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'"

// hostServer serves the host test page, the embedded host module, and the
// fixture MCP App as every asset, with the asset headers; it counts asset
// requests.
type hostServer struct {
	*httptest.Server
	mu      sync.Mutex
	fetched map[string]int
}

func newHostServer(t *testing.T) *hostServer {
	t.Helper()
	app, err := os.ReadFile("testdata/mcp-app/app.html")
	require.NoError(t, err, "testdata/mcp-app/app.html is committed (npm ci && npm run build rebuilds it)")
	page, err := os.ReadFile("testdata/host.html")
	require.NoError(t, err)
	wiring, err := os.ReadFile("testdata/host-test.js")
	require.NoError(t, err)
	s := &hostServer{fetched: map[string]int{}}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /{$}", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		w.Header().Set("Content-Security-Policy", hostPageCSP)
		_, _ = w.Write(page)
	})
	mux.HandleFunc("GET /host-test.js", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/javascript")
		_, _ = w.Write(wiring)
	})
	mux.Handle("GET /static/", http.FileServerFS(appblock.Static))
	mux.HandleFunc("GET /assets/{id}", func(w http.ResponseWriter, r *http.Request) {
		id := r.PathValue("id")
		if !appblock.IsAssetID(id) {
			http.NotFound(w, r)
			return
		}
		s.mu.Lock()
		s.fetched[id]++
		s.mu.Unlock()
		for _, h := range appblock.AssetHeaders(s.URL) {
			w.Header().Set(h[0], h[1])
		}
		_, _ = w.Write(app)
	})
	s.Server = httptest.NewServer(mux)
	t.Cleanup(s.Close)
	return s
}

func (s *hostServer) assetFetches() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for _, c := range s.fetched {
		n += c
	}
	return n
}

func textOf(t *testing.T, ctx context.Context, sel string) string {
	t.Helper()
	text, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS(sel)))
	require.NoError(t, err)
	return text
}

// TestMCPAppInTheBrowser runs the fixture MCP App (built from the published
// @modelcontextprotocol/ext-apps) under static/mcphost.js and the asset
// policy in Chromium: nothing loads before Run; after Run the app gets the
// tool result; its fetch is blocked by the policy; an open-link to
// http://127.0.0.1 is refused without asking and an https one asks the
// person; ui/message fills the composer; tools/call is refused; the height
// is capped; a third app stops the first.
func TestMCPAppInTheBrowser(t *testing.T) {
	t.Parallel()
	ctx := browser.New(t)
	srv := newHostServer(t)

	require.NoError(t, chromedp.Do(ctx,
		chromedp.Navigate(srv.URL+"/"),
		chromedp.WaitVisible(chromedp.CSS(`section[data-asset="`+assetC+`"] button.app-run`)),
	))

	// Nothing runs before Run: no frame, no asset fetched.
	require.Equal(t, 0, browser.Eval[int](t, ctx, `document.querySelectorAll("iframe").length`))
	require.Equal(t, "App A", textOf(t, ctx, `section[data-asset="`+assetA+`"] .app-title`))
	require.Equal(t, 0, srv.assetFetches(), "no asset is fetched before Run")

	// The link policy of the module answers the shared table as the Go one does.
	lt := readLinkTable(t)
	for _, c := range lt.Cases {
		reason := browser.Eval[string](t, ctx, `MCPHost.checkLink(`+jsString(t, c.URL)+`, `+jsStrings(t, lt.OwnOrigins)+`)`)
		require.Equal(t, c.OK, reason == "", "checkLink(%q) = %q (%s)", c.URL, reason, c.Why)
	}

	// Run App A: the handshake, then the tool input and result.
	require.NoError(t, chromedp.Do(ctx, browser.RunApp(assetA)))
	frameA := browser.Frame(t, ctx, srv.URL+"/assets/"+assetA)
	require.NoError(t, chromedp.Do(frameA,
		browser.WaitText("#result", `t === "14:32 +07:00"`),
		browser.WaitText("#status", `t === "connected to appruntime"`),
	))
	require.Equal(t, `structured: {"hour":14}`, textOf(t, frameA, "#structured"), "structured_content arrives as structuredContent")
	require.Equal(t, `input: {"link":"http://127.0.0.1/"}`, textOf(t, frameA, "#input"))
	require.Equal(t, 1, srv.assetFetches())
	require.NoError(t, chromedp.Do(ctx, browser.WaitSteady(`section[data-asset="`+assetA+`"] iframe`)))

	// Its fetch is blocked by the asset's policy.
	require.NoError(t, chromedp.Do(frameA,
		browser.Press("#fetch"),
		browser.WaitText("#fetch-status", `t === "fetch: blocked by CSP (connect-src)"`),
	))

	// An open-link to http://127.0.0.1 is refused without asking the person.
	require.NoError(t, chromedp.Do(frameA,
		browser.Press("#open"),
		browser.WaitText("#open-status", `t === "open-link: refused http://127.0.0.1/"`),
	))
	require.Equal(t, 0, browser.Eval[int](t, ctx, `window.confirmAsked.length`), "a refused link is never offered")
	require.Equal(t, "only https links may be opened",
		browser.Eval[string](t, ctx, `window.hostEvents.find(e => e.name === "open-link-refused").reason`))

	// ui/message fills the composer and sends nothing; tools/call is refused.
	require.NoError(t, chromedp.Do(frameA,
		browser.Press("#message"),
		browser.WaitText("#message-status", `t === "message: accepted"`),
		browser.Press("#tool"),
		browser.WaitText("#tool-status", `t.startsWith("tools/call: refused: ") && t.includes("not supported")`),
	))
	require.Equal(t, "Hello from the app", browser.Eval[string](t, ctx, `document.getElementById("composer").value`))

	// A message that is not from an app's own frame is not heard.
	require.NoError(t, chromedp.Do(ctx, chromedp.Evaluate[chromedp.Void](`window.postMessage({jsonrpc: "2.0", id: 99, method: "ui/message",
		params: {role: "user", content: [{type: "text", text: "forged"}]}}, "*")`)))
	time.Sleep(300 * time.Millisecond)
	require.Equal(t, "Hello from the app", browser.Eval[string](t, ctx, `document.getElementById("composer").value`))
	require.Equal(t, 1, browser.Eval[int](t, ctx, `window.hostEvents.filter(e => e.name === "message").length`))

	// Size changes are honoured up to 70 % of the viewport.
	require.NoError(t, chromedp.Do(frameA, browser.Press("#grow")))
	require.NoError(t, chromedp.Do(ctx, browser.Poll(
		`window.hostEvents.some(e => e.name === "size" && e.height === Math.floor(window.innerHeight * 0.7))`, 15*time.Second)))
	require.Equal(t, browser.Eval[int](t, ctx, `Math.floor(window.innerHeight * 0.7)`),
		browser.Eval[int](t, ctx, `document.querySelector('section[data-asset="`+assetA+`"] iframe').getBoundingClientRect().height | 0`))

	// Run App B: an https link asks the person (who declines here).
	require.NoError(t, chromedp.Do(ctx, browser.RunApp(assetB)))
	frameB := browser.Frame(t, ctx, srv.URL+"/assets/"+assetB)
	require.NoError(t, chromedp.Do(frameB, browser.WaitText("#result", `t === "result B"`)))
	require.NoError(t, chromedp.Do(ctx, browser.WaitSteady(`section[data-asset="`+assetB+`"] iframe`)))
	require.NoError(t, chromedp.Do(frameB,
		browser.Press("#open"),
		browser.WaitText("#open-status", `t === "open-link: refused https://example.com/docs"`),
	))
	require.Equal(t, []string{"https://example.com/docs"}, browser.Eval[[]string](t, ctx, `window.confirmAsked`))

	// A third app stops the oldest, which shows its Run control again.
	require.Equal(t, 2, browser.Eval[int](t, ctx, `document.querySelectorAll("iframe").length`))
	require.NoError(t, chromedp.Do(ctx,
		browser.RunApp(assetC),
		chromedp.WaitVisible(chromedp.CSS(`section[data-asset="`+assetA+`"] button.app-run`)),
	))
	frameC := browser.Frame(t, ctx, srv.URL+"/assets/"+assetC)
	require.NoError(t, chromedp.Do(frameC, browser.WaitText("#result", `t === "result C"`)))
	states := browser.Eval[[]string](t, ctx, `[...document.querySelectorAll("section.app-block")].map(s => s.dataset.state)`)
	require.Equal(t, []string{"stopped", "running", "running"}, states)
	require.Equal(t, 0, browser.Eval[int](t, ctx, `document.querySelectorAll('section[data-asset="`+assetA+`"] iframe').length`))
	require.Equal(t, 2, browser.Eval[int](t, ctx, `document.querySelectorAll("iframe").length`))
}

func jsString(t *testing.T, s string) string {
	t.Helper()
	return string(mustJSON(t, s))
}

func jsStrings(t *testing.T, ss []string) string {
	t.Helper()
	return string(mustJSON(t, ss))
}
