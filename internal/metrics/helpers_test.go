package metrics_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/appruntime/appruntime/internal/metrics"
	"github.com/appruntime/appruntime/internal/testkit"
	"github.com/appruntime/appruntime/internal/web"
)

// serve runs m's scrape server on a loopback port and returns its /metrics URL.
func serve(t *testing.T, m *metrics.Metrics) string {
	t.Helper()
	ln, err := web.Listen("127.0.0.1:0")
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- metrics.Serve(ctx, ln, m.Handler(), time.Second) }()
	t.Cleanup(func() {
		cancel()
		require.NoError(t, <-done)
	})
	return "http://" + ln.Addr().String() + metrics.Path
}

// scrape reads the exposition at url (testkit.Scrape).
func scrape(t *testing.T, url string) map[string]float64 { return testkit.Scrape(t, url) }

// requireMoved requires each series of want to have moved by its value.
func requireMoved(t *testing.T, before, after map[string]float64, want map[string]float64) {
	t.Helper()
	testkit.RequireMoved(t, before, after, want)
}
