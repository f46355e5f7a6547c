package console_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"

	"github.com/appruntime/appruntime/internal/bundle"
	"github.com/appruntime/appruntime/internal/testkit/browser"
)

// cdnServer is a loopback HTTPS server standing in for a CDN: its script
// marks the element its ?el= names as loaded, and it counts requests.
type cdnServer struct {
	*httptest.Server
	hits atomic.Int64
}

func newCDN(t *testing.T) *cdnServer {
	t.Helper()
	c := &cdnServer{}
	c.Server = httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c.hits.Add(1)
		w.Header().Set("Content-Type", "text/javascript")
		fmt.Fprintf(w, "document.getElementById(%q).textContent = 'loaded';\n", r.URL.Query().Get("el"))
	}))
	t.Cleanup(c.Close)
	return c
}

// grantsProbeHTML loads one script from each origin and shows what became
// of each (loaded, or blocked: the error a CSP refusal fires) and the
// policy violations the document saw.
func grantsProbeHTML(version string, origins map[string]string) []byte {
	var b strings.Builder
	b.WriteString(`<!doctype html><html><body><p id="violations"></p><script>
document.addEventListener('securitypolicyviolation', e => { document.getElementById('violations').textContent += e.blockedURI + ' '; });
</script>`)
	for el, origin := range origins {
		fmt.Fprintf(&b, `<p id=%q>waiting</p><script src="%s/lib.js?el=%s&v=%s" onerror="document.getElementById('%s').textContent = 'blocked'"></script>`,
			el, origin, el, version, el)
	}
	b.WriteString(`</body></html>`)
	return []byte(b.String())
}

// TestBundleGrantsInTheBrowser serves bundle versions from the API to
// Chromium: with an approved declaration a script from the approved origin
// (a loopback HTTPS server, allowed by the test OUTBOUND_ALLOW_CIDRS) runs
// while one from an undeclared origin is blocked by the policy and never
// requested; a version whose declaration is pending runs under the default
// policy, which blocks both.
func TestBundleGrantsInTheBrowser(t *testing.T) {
	t.Parallel()
	approved, other := newCDN(t), newCDN(t)
	ctx := browser.New(t, browser.TrustCertificate(approved.Certificate()))
	s := newStack(t)
	bg := context.Background()
	ws, actor := s.Tenant.Workspace.ID, "user:"+s.Tenant.Admin.ID
	origins := map[string]string{"approved": approved.URL, "other": other.URL}

	v1, err := s.P.Bundles.Create(bg, ws, actor, bundle.Upload{Name: "cdn-probe", ContentType: "text/html",
		Content: grantsProbeHTML("1", origins), Grants: bundle.Grants{ResourceDomains: []string{approved.URL}}})
	require.NoError(t, err)
	_, err = s.P.Bundles.Decide(bg, ws, actor, v1.ID, 1, bundle.DecisionApprove)
	require.NoError(t, err)
	v2, err := s.P.Bundles.AddVersion(bg, ws, actor, v1.ID, bundle.Upload{ContentType: "text/html",
		Content: grantsProbeHTML("2", origins), Grants: bundle.Grants{ResourceDomains: []string{approved.URL}}})
	require.NoError(t, err)
	require.Equal(t, "pending", v2.Grant.State)

	require.NoError(t, chromedp.Do(ctx,
		chromedp.Navigate(v1.URL),
		browser.WaitText("#approved", `t === "loaded"`),
		browser.WaitText("#other", `t === "blocked"`),
		browser.WaitText("#violations", `t.includes(`+"'"+other.URL+"'"+`)`),
	))
	violations, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS("#violations")))
	require.NoError(t, err)
	require.NotContains(t, violations, approved.URL, "the approved origin raised no violation")
	require.EqualValues(t, 1, approved.hits.Load(), "the approved script was fetched once")
	require.Zero(t, other.hits.Load(), "the undeclared origin was never requested: the policy blocked it")

	require.NoError(t, chromedp.Do(ctx,
		chromedp.Navigate(v2.URL),
		browser.WaitText("#approved", `t === "blocked"`),
		browser.WaitText("#other", `t === "blocked"`),
	))
	time.Sleep(200 * time.Millisecond)
	require.EqualValues(t, 1, approved.hits.Load(), "pending: the declared origin is not reached either")
	require.Zero(t, other.hits.Load())
}
