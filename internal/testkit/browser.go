package testkit

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// ChromiumPath is Debian's chromium (scripts/services.sh installs it).
const ChromiumPath = "/usr/bin/chromium"

// BrowserTimeout bounds the whole browser session of a test.
const BrowserTimeout = 90 * time.Second

// Browser starts a headless Chromium with a fresh profile and returns a
// chromedp context on its first tab, ended at cleanup. A missing Chromium
// fails the test (it is a dependency of the suite, like Postgres); -short
// skips it. The flags run it as root in a container (no sandbox, no GPU, no
// /dev/shm) and keep it from reaching for the network this machine does not
// have.
func Browser(t testing.TB) context.Context {
	t.Helper()
	needServer(t, "Chromium")
	if _, err := os.Stat(ChromiumPath); err != nil {
		t.Fatalf("testkit: Chromium is needed at %s: %v (run scripts/services.sh, which installs it)", ChromiumPath, err)
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
	allocCtx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancelCtx := chromedp.NewContext(allocCtx, chromedp.WithLogf(t.Logf))
	ctx, cancelTimeout := context.WithTimeout(ctx, BrowserTimeout)
	t.Cleanup(func() {
		cancelTimeout()
		cancelCtx()
		cancelAlloc()
	})
	if err := chromedp.Do(ctx); err != nil {
		t.Fatalf("testkit: start Chromium: %v", err)
	}
	return ctx
}
