package metrics

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// DocumentWorkOutcomes are the outcomes of a wait for a page rendering or
// OCR slot (limit.WorkGate's): admitted, workspace_share and process (a
// 503 past the wait), stopped (the caller's context ended), unavailable
// (Redis failed).
var DocumentWorkOutcomes = []string{"admitted", "workspace_share", "process", "stopped", "unavailable"}

// DocumentWork registers the gauges of the process's page renderings and
// OCR runs (inUse: holding a slot; waiting: waiting for one) and returns
// the func that records each wait's outcome and length, for
// limit.WorkGateOptions.Observe. On a nil *Metrics it returns nil.
func (m *Metrics) DocumentWork(inUse, waiting func() int) func(outcome string, waited time.Duration) {
	if m == nil {
		return nil
	}
	waits := prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Namespace: Namespace, Name: "document_work_wait_seconds",
		Help:    "Waits for a slot to render or OCR a page, by outcome: admitted, workspace_share or process (refused with 503 past DOCUMENT_RENDER_WAIT), stopped, unavailable (Redis failed).",
		Buckets: []float64{.001, .01, .05, .1, .25, .5, 1, 2.5, 5, 10, 30},
	}, []string{"outcome"})
	known := map[string]prometheus.Observer{}
	for _, o := range DocumentWorkOutcomes {
		known[o] = waits.WithLabelValues(o)
	}
	m.reg.MustRegister(waits,
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Namespace: Namespace, Name: "document_work_in_progress",
			Help: "Page renderings and OCR runs this process runs now (at most DOCUMENT_RENDER_CONCURRENCY).",
		}, func() float64 { return float64(inUse()) }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Namespace: Namespace, Name: "document_work_waiting",
			Help: "Page renderings and OCR runs waiting for a slot in this process.",
		}, func() float64 { return float64(waiting()) }))
	other := waits.WithLabelValues(Other)
	return func(outcome string, waited time.Duration) {
		o, ok := known[outcome]
		if !ok {
			o = other
		}
		o.Observe(waited.Seconds())
	}
}
