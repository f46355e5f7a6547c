package metrics_test

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"github.com/stretchr/testify/require"

	"github.com/appruntime/appruntime/internal/metrics"
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

// scrape reads the exposition at url as real Prometheus would and returns
// each sample by its series ("name{label="value",…}", labels sorted); a
// histogram gives its _count and _sum.
func scrape(t *testing.T, url string) map[string]float64 {
	t.Helper()
	res, err := http.Get(url)
	require.NoError(t, err)
	defer res.Body.Close()
	require.Equal(t, http.StatusOK, res.StatusCode)
	require.Contains(t, res.Header.Get("Content-Type"), "text/plain")
	parser := expfmt.NewTextParser(model.LegacyValidation)
	families, err := parser.TextToMetricFamilies(res.Body)
	require.NoError(t, err)
	out := map[string]float64{}
	for name, f := range families {
		for _, m := range f.GetMetric() {
			labels := series(m.GetLabel())
			switch f.GetType() {
			case dto.MetricType_HISTOGRAM:
				out[name+"_count"+labels] = float64(m.GetHistogram().GetSampleCount())
				out[name+"_sum"+labels] = m.GetHistogram().GetSampleSum()
			case dto.MetricType_COUNTER:
				out[name+labels] = m.GetCounter().GetValue()
			case dto.MetricType_GAUGE:
				out[name+labels] = m.GetGauge().GetValue()
			case dto.MetricType_UNTYPED:
				out[name+labels] = m.GetUntyped().GetValue()
			}
		}
	}
	return out
}

func series(labels []*dto.LabelPair) string {
	if len(labels) == 0 {
		return ""
	}
	parts := make([]string, 0, len(labels))
	for _, l := range labels {
		parts = append(parts, fmt.Sprintf("%s=%q", l.GetName(), l.GetValue()))
	}
	slices.Sort(parts)
	return "{" + strings.Join(parts, ",") + "}"
}

// delta returns after[k] - before[k] for every series in want, so a test
// states exactly how much each series moved.
func requireMoved(t *testing.T, before, after map[string]float64, want map[string]float64) {
	t.Helper()
	for k, w := range want {
		_, present := after[k]
		require.True(t, present, "series %s is not exported", k)
		require.InDelta(t, w, after[k]-before[k], 1e-9, "series %s", k)
	}
}
