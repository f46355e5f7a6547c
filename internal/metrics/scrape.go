package metrics

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// cachedRead runs a scrape-time read at most once per ScrapeCacheTTL: the
// scrapes in between reuse its result, error included, so a failing
// database is not hammered by every scraper either.
type cachedRead[T any] struct {
	read func(context.Context) (T, error)
	now  func() time.Time

	mu  sync.Mutex
	at  time.Time
	val T
	err error
}

func (c *cachedRead[T]) get() (T, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	now := c.now()
	if !c.at.IsZero() && now.Sub(c.at) < ScrapeCacheTTL {
		return c.val, c.err
	}
	ctx, cancel := context.WithTimeout(context.Background(), ScrapeTimeout)
	defer cancel()
	c.val, c.err = c.read(ctx)
	c.at = now
	return c.val, c.err
}

// scrapeGauge is a gauge whose value is read on scrape (outbox lag, live
// sessions). A failed read leaves the gauge out of the scrape (a missing
// series, which an absent() alert catches) and is logged.
type scrapeGauge struct {
	desc *prometheus.Desc
	val  *cachedRead[float64]
	log  *slog.Logger
}

// newScrapeGauge returns the gauge appruntime_<name>, read by read.
func newScrapeGauge(name, help string, read func(context.Context) (float64, error), log *slog.Logger) *scrapeGauge {
	return &scrapeGauge{
		desc: prometheus.NewDesc(prometheus.BuildFQName(Namespace, "", name), help, nil, nil),
		val:  &cachedRead[float64]{read: read, now: time.Now},
		log:  log,
	}
}

func (g *scrapeGauge) Describe(ch chan<- *prometheus.Desc) { ch <- g.desc }

func (g *scrapeGauge) Collect(ch chan<- prometheus.Metric) {
	v, err := g.val.get()
	if err != nil {
		g.log.Warn("metrics: scrape-time read failed", "metric", g.desc.String(), "error", err.Error())
		ch <- prometheus.NewInvalidMetric(g.desc, err)
		return
	}
	ch <- prometheus.MustNewConstMetric(g.desc, prometheus.GaugeValue, v)
}
