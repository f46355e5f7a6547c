// Package browser starts the headless Chromium of the browser tests (kept
// apart from testkit so that only those tests link chromedp).
package browser

import (
	"context"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/target"
	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"
)

// ChromiumPath is Debian's chromium (scripts/services.sh installs it).
const ChromiumPath = "/usr/bin/chromium"

// BrowserTimeout bounds the whole browser session of a test.
const BrowserTimeout = 90 * time.Second

// New starts a headless Chromium with a fresh profile and returns a
// context that drives it, closed at cleanup. A missing Chromium fails the
// test (it is a dependency of the suite, like Postgres); -short skips it.
// The background-networking flags keep Chromium from reaching for the
// network this machine does not have. extra adds flags of the test's own
// (such as trusting a test server's certificate).
func New(t *testing.T, extra ...chromedp.ExecAllocatorOption) context.Context {
	t.Helper()
	if testing.Short() {
		t.Skip("needs Chromium (skipped with -short)")
	}
	if _, err := os.Stat(ChromiumPath); err != nil {
		t.Fatalf("Chromium is needed at %s: %v (run scripts/services.sh, which installs it)", ChromiumPath, err)
	}
	opts := []chromedp.ExecAllocatorOption{
		chromedp.ExecPath(ChromiumPath),
		chromedp.Headless,
		chromedp.NoSandbox,
		chromedp.DisableGPU,
		chromedp.NoFirstRun,
		chromedp.NoDefaultBrowserCheck,
		chromedp.UserDataDir(t.TempDir()),
		chromedp.Flag("disable-quic", true),
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.Flag("disable-dev-shm-usage", true),
		chromedp.Flag("disable-extensions", true),
		chromedp.Flag("disable-default-apps", true),
		chromedp.Flag("metrics-recording-only", true),
		chromedp.Flag("safebrowsing-disable-auto-update", true),
		chromedp.WindowSize(1280, 900),
	}
	opts = append(opts, extra...)
	allocCtx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancelCtx := chromedp.NewContext(allocCtx, chromedp.WithLogf(t.Logf))
	ctx, cancelTimeout := context.WithTimeout(ctx, BrowserTimeout)
	t.Cleanup(func() {
		cancelTimeout()
		cancelCtx()
		cancelAlloc()
	})
	require.NoError(t, chromedp.Do(ctx), "start Chromium")
	return ctx
}

// Frame returns a context that runs actions in the iframe whose URL
// starts with urlPrefix. A sandboxed iframe (opaque origin) runs in a
// process of its own, as a separate target; the context attaches to it.
func Frame(t *testing.T, ctx context.Context, urlPrefix string) context.Context {
	t.Helper()
	var id target.ID
	require.Eventually(t, func() bool {
		infos, err := chromedp.Targets(ctx)
		if err != nil {
			return false
		}
		for _, info := range infos {
			if info.Type == "iframe" && strings.HasPrefix(info.URL, urlPrefix) {
				id = info.TargetID
				return true
			}
		}
		return false
	}, 20*time.Second, 100*time.Millisecond, "no iframe target for %s", urlPrefix)
	frame, cancel := chromedp.NewContext(ctx, chromedp.WithTargetID(id))
	t.Cleanup(cancel)
	return frame
}

// Poll waits until the JavaScript expression expr is truthy in the
// context's document, checking it every 50 ms for up to timeout. It polls
// on a timer, never on animation frames (chromedp's default): Chromium
// stops rendering a cross-origin frame that is off screen or whose page is
// busy, and a poll waiting for the next frame then never runs again, not
// even to see its own timeout, so the test hung until its browser's 90 s
// were spent. The wait is also bounded on the Go side, and its error names
// the expression.
func Poll(expr string, timeout time.Duration) chromedp.Action[chromedp.Void] {
	poll := chromedp.Poll[chromedp.Void](expr, chromedp.WithPollingInterval(50*time.Millisecond), chromedp.WithPollingTimeout(timeout))
	return func(ctx context.Context, t *chromedp.Target) (chromedp.Void, error) {
		ctx, cancel := context.WithTimeout(ctx, timeout+5*time.Second)
		defer cancel()
		v, err := poll(ctx, t)
		if err != nil {
			return v, fmt.Errorf("waiting for %s: %w", expr, err)
		}
		return v, nil
	}
}

// WaitText polls (up to 15 s) until the text t of the element sel (a CSS
// selector) satisfies the JavaScript condition cond, such as
// `t === "ready"`.
//
// On a timeout the error says what the text was, so a failure shows what
// the page did instead.
func WaitText(sel, cond string) chromedp.Action[chromedp.Void] {
	poll := Poll(`(() => { const e = document.querySelector(`+jsQuote(sel)+`); if (!e) return false; const t = e.textContent; return `+cond+`; })()`, pollTimeout)
	return func(ctx context.Context, t *chromedp.Target) (chromedp.Void, error) {
		v, err := poll(ctx, t)
		if err == nil {
			return v, nil
		}
		last, lerr := chromedp.Evaluate[string](`(() => { const e = document.querySelector(`+jsQuote(sel)+`); return e ? JSON.stringify(e.textContent) : "no element"; })()`)(context.WithoutCancel(ctx), t)
		if lerr != nil {
			return v, err
		}
		return v, fmt.Errorf("%w (its text was %s)", err, last)
	}
}

// Press clicks the element sel (a CSS selector) through the DOM, not at
// its coordinates: inside an app's frame that is still resizing (its own
// status lines grow it), a mouse click can land beside the button.
func Press(sel string) chromedp.Action[chromedp.Void] {
	return chromedp.Evaluate[chromedp.Void](`document.querySelector(` + jsQuote(sel) + `).click()`)
}

// pollTimeout bounds each of the waits below.
const pollTimeout = 15 * time.Second

// jsQuote is s as a single-quoted JavaScript string (s holds no line break:
// a CSS selector).
func jsQuote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `\'`) + "'"
}

// WaitSteady polls (up to 15 s) until the element sel (a CSS selector) has
// kept its position and size for half a second. An app's frame grows as
// the app reports its size; a click aimed into it while it still grows can
// be pressed on one button and released beside it (the frame's document
// was scrolled to show the button, then the scroll went away), and no
// click happens at all.
func WaitSteady(sel string) chromedp.Action[chromedp.Void] {
	quoted := jsQuote(sel)
	return Poll(`(() => {
		const e = document.querySelector(`+quoted+`); if (!e) return false;
		const r = JSON.stringify(e.getBoundingClientRect()), seen = (window.steadyRects ??= {});
		const last = seen[`+quoted+`];
		if (!last || last.rect !== r) { seen[`+quoted+`] = {rect: r, since: performance.now()}; return false; }
		return performance.now() - last.since >= 500;
	})()`, pollTimeout)
}

// Eval evaluates the JavaScript expression expr in ctx and returns its value.
func Eval[T any](t *testing.T, ctx context.Context, expr string) T {
	t.Helper()
	out, err := chromedp.Run(ctx, chromedp.Evaluate[T](expr))
	require.NoError(t, err)
	return out
}

// RunApp presses the Run control of the app block (mcphost.js) of asset.
// It clicks through the DOM, not at the button's coordinates: a running app
// above it may still be resizing its frame (a slow machine), which moves
// the button under a mouse click.
func RunApp(asset string) chromedp.Action[chromedp.Void] {
	return chromedp.Evaluate[chromedp.Void](`document.querySelector('section[data-asset="` + asset + `"] button.app-run').click()`)
}

// TrustCertificate makes Chromium accept TLS servers presenting cert's
// public key (httptest.NewTLSServer's), as if a public CA had signed it, and
// no other certificate error.
func TrustCertificate(cert *x509.Certificate) chromedp.ExecAllocatorOption {
	sum := sha256.Sum256(cert.RawSubjectPublicKeyInfo)
	return chromedp.Flag("ignore-certificate-errors-spki-list", base64.StdEncoding.EncodeToString(sum[:]))
}
