package metrics

import (
	"sync/atomic"

	"github.com/prometheus/client_golang/prometheus"
)

// observerCache gives each combination of a histogram's label values, by an
// index the caller computes, a child resolved once: the first observation
// of a combination looks its labels up, every later one is an atomic load.
// Children are created on first use, so combinations that never happen
// export no series.
type observerCache struct {
	vec   *prometheus.HistogramVec
	cells []atomic.Pointer[observerCell]
}

// observerCell holds one resolved child.
type observerCell struct{ o prometheus.Observer }

func newObserverCache(vec *prometheus.HistogramVec, size int) observerCache {
	return observerCache{vec: vec, cells: make([]atomic.Pointer[observerCell], size)}
}

// observe records v on child idx; labels, called on the first use of idx
// only, returns its label values. Two goroutines racing on a first use
// resolve the same child, so either store is right.
func (c *observerCache) observe(idx int, v float64, labels func() []string) {
	cell := c.cells[idx].Load()
	if cell == nil {
		cell = &observerCell{o: c.vec.WithLabelValues(labels()...)}
		c.cells[idx].Store(cell)
	}
	cell.o.Observe(v)
}
