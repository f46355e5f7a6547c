package testkit

import (
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"github.com/stretchr/testify/require"
)

// Scrape reads the Prometheus exposition at url as a real Prometheus would
// and returns each sample by its series (`name{label="value",…}`, labels
// sorted); a histogram gives its _count and _sum.
func Scrape(t testing.TB, url string) map[string]float64 {
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
			labels := Series(m.GetLabel())
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

// Series writes labels the way Scrape keys its samples.
func Series(labels []*dto.LabelPair) string {
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

// RequireMoved requires that every series of want moved by exactly its
// value between two scrapes (after[k] - before[k]), so a test states how
// much each series moved, not only that it did.
func RequireMoved(t testing.TB, before, after map[string]float64, want map[string]float64) {
	t.Helper()
	for k, w := range want {
		_, present := after[k]
		require.True(t, present, "series %s is not exported", k)
		require.InDelta(t, w, after[k]-before[k], 1e-9, "series %s", k)
	}
}
