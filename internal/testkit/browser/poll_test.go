package browser_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"

	"github.com/appruntime/appruntime/internal/testkit/browser"
)

// TestWaitsEndInAnOffscreenFrame: Chromium renders no frames for a
// sandboxed (cross-origin) iframe below the fold, so a wait must not hang
// on animation frames there: a text that arrives late is seen, and a
// condition that never holds ends at its own timeout with an error naming
// it, well before the browser's deadline.
func TestWaitsEndInAnOffscreenFrame(t *testing.T) {
	t.Parallel()
	ctx := browser.New(t)
	mux := http.NewServeMux()
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		_, _ = w.Write([]byte(`<!doctype html><body><div style="height:5000px">above the fold</div><iframe sandbox="allow-scripts" src="/frame"></iframe></body>`))
	})
	mux.HandleFunc("/frame", func(w http.ResponseWriter, r *http.Request) {
		_, _ = w.Write([]byte(`<!doctype html><body><p id="late"></p><script>setTimeout(() => { document.getElementById("late").textContent = "here"; }, 300)</script></body>`))
	})
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	require.NoError(t, chromedp.Do(ctx, chromedp.Navigate(srv.URL+"/")))
	frame := browser.Frame(t, ctx, srv.URL+"/frame")

	bounded, cancel := context.WithTimeout(frame, 20*time.Second)
	defer cancel()
	require.NoError(t, chromedp.Do(bounded, browser.WaitText("#late", `t === "here"`)))

	err := chromedp.Do(bounded, browser.Poll(`window.neverSet === true`, time.Second))
	require.Error(t, err)
	require.False(t, errors.Is(err, context.DeadlineExceeded), "the poll's own timeout ends it: %v", err)
	require.Contains(t, err.Error(), "window.neverSet === true")
}
