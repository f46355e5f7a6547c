package metrics_test

import (
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/appruntime/appruntime/internal/metrics"
)

// BenchmarkObserveVerb is the cost a runtime call pays for its metrics
// (docs/operators.md#metrics); compare BenchmarkObserveVerbRaw, the same observation
// through client_golang's label lookup.
func BenchmarkObserveVerb(b *testing.B) {
	m := metrics.New(metrics.Options{Capabilities: capabilities})
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			m.ObserveVerb("read", metrics.KindRows, 200, 1500*time.Microsecond)
		}
	})
}

// BenchmarkObserveVerbRaw is the baseline: WithLabelValues on every call.
func BenchmarkObserveVerbRaw(b *testing.B) {
	vec := prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "raw_seconds", Buckets: prometheus.DefBuckets}, []string{"verb", "kind", "status"})
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			vec.WithLabelValues("read", "rows", "200").Observe(0.0015)
		}
	})
}

func BenchmarkObserveDataSource(b *testing.B) {
	m := metrics.New(metrics.Options{})
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			m.ObserveDataSource("postgres", metrics.StatementSelect, false, 300*time.Microsecond)
		}
	})
}

// BenchmarkHistogramObserve is the floor: one Observe on a histogram with the
// verb histogram's buckets and no labels at all. ObserveVerb's own cost is
// its difference from this.
func BenchmarkHistogramObserve(b *testing.B) {
	h := prometheus.NewHistogram(prometheus.HistogramOpts{Name: "floor_seconds", Buckets: []float64{.001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60, 300, 900}})
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			h.Observe(0.0015)
		}
	})
}
