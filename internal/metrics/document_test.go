package metrics_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/appruntime/appruntime/internal/limit"
	"github.com/appruntime/appruntime/internal/metrics"
	"github.com/appruntime/appruntime/internal/testkit"
)

// TestDocumentWorkSeries: a page-rendering gate wired to the metrics as
// the platform wires it exports its slots in use and waiting, and each
// wait's outcome: admitted, refused for the workspace's share, refused for
// the process's bound.
func TestDocumentWorkSeries(t *testing.T) {
	t.Parallel()
	rd := testkit.Redis(t)
	m := metrics.New(metrics.Options{})
	url := serve(t, m)
	var gate *limit.WorkGate
	observe := m.DocumentWork(func() int { return gate.InUse() }, func() int { return gate.Waiting() })
	gate = limit.NewWorkGate(limit.WorkGateOptions{What: "page renderings", Redis: rd.Client, KeyPrefix: rd.Prefix,
		Process: 2, Share: 1, Wait: 20 * time.Millisecond, Observe: observe})
	before := scrape(t, url)
	ctx := context.Background()

	a, err := gate.Acquire(ctx, "ws-a", time.Minute)
	require.NoError(t, err)
	_, err = gate.Acquire(ctx, "ws-a", time.Minute)
	require.ErrorIs(t, err, limit.ErrSlotsTaken)
	b, err := gate.Acquire(ctx, "ws-b", time.Minute)
	require.NoError(t, err)
	_, err = gate.Acquire(ctx, "ws-c", time.Minute)
	require.Error(t, err, "the process is full")

	after := scrape(t, url)
	series := "appruntime_document_work_wait_seconds_count"
	requireMoved(t, before, after, map[string]float64{
		series + `{outcome="admitted"}`:        2,
		series + `{outcome="workspace_share"}`: 1,
		series + `{outcome="process"}`:         1,
		series + `{outcome="stopped"}`:         0,
		series + `{outcome="unavailable"}`:     0,
	})
	require.Equal(t, 2.0, after["appruntime_document_work_in_progress"])
	require.Equal(t, 0.0, after["appruntime_document_work_waiting"])
	a()
	b()
	require.Equal(t, 0.0, scrape(t, url)["appruntime_document_work_in_progress"])
	require.Nil(t, (*metrics.Metrics)(nil).DocumentWork(nil, nil), "no metrics, nothing observed")
}
