package metrics

import (
	"context"
	"log/slog"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// Namespace prefixes every appruntime metric.
const Namespace = "appruntime"

// Scrape bounds: a value read from the database or Redis on scrape (queue
// depths, outbox lag, live sessions) is reused for ScrapeCacheTTL, so several
// scrapers or a fast scrape interval cost one read, and a read that takes
// longer than ScrapeTimeout is abandoned for that scrape.
const (
	ScrapeCacheTTL = 5 * time.Second
	ScrapeTimeout  = 3 * time.Second
)

// Other is the label value of anything outside a label's closed set.
const Other = "other"

// Options say which scrape-time sources this process has; a nil one leaves
// its metric out (each is read where it is cheap and meaningful: the worker
// has the queues, any process the database).
type Options struct {
	// Capabilities are the capability names /capability may record as its
	// op kind (bindingspec.Catalog's names); any other is "other".
	Capabilities []string
	// Queues, when set, exports the depth and latency of these asynq queues.
	Queues *QueueSource
	// OutboxLag returns the age of the oldest outbox row not yet relayed,
	// 0 when every row is sent.
	OutboxLag func(context.Context) (time.Duration, error)
	// LiveSessions returns the number of app sessions neither expired nor revoked.
	LiveSessions func(context.Context) (int, error)
	// PlatformDB, when set, returns the statements and the transactions
	// (BEGINs) this process has sent the platform's database so far
	// (store.Store.Counted): counters read on scrape, for the counted
	// costs per request of docs/performance.md#counted-costs.
	PlatformDB func() (statements, transactions uint64)
	// Log receives scrape errors; nil discards them.
	Log *slog.Logger
}

// Metrics is the registry and its collectors. Build it with New; a nil
// *Metrics records nothing.
type Metrics struct {
	reg  *prometheus.Registry
	log  *slog.Logger
	verb verbMetrics
	ds   dataSourceMetrics

	rateLimited   *prometheus.CounterVec
	upstream      *prometheus.HistogramVec
	jobs          *jobMetrics
	webhookOK     prometheus.Counter
	webhookFailed *prometheus.CounterVec
	httpDuration  *prometheus.HistogramVec
}

// New builds the registry with every collector registered.
func New(o Options) *Metrics {
	log := o.Log
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	m := &Metrics{reg: prometheus.NewRegistry(), log: log}
	m.reg.MustRegister(
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
	)
	m.verb = newVerbMetrics(m.reg, o.Capabilities)
	m.ds = newDataSourceMetrics(m.reg)
	m.rateLimited = prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: Namespace, Name: "runtime_rate_limited_total",
		Help: "Runtime calls refused with 429, by the class of limit the surface hit and the verb.",
	}, []string{"class", "verb"})
	m.upstream = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Namespace: Namespace, Name: "gateway_upstream_duration_seconds",
		Help:    "Time from sending an outbound request to its response headers, by client and status class (2xx..5xx, or error when no response came).",
		Buckets: []float64{.005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60},
	}, []string{"client", "status"})
	m.jobs = newJobMetrics(m.reg)
	m.webhookOK = prometheus.NewCounter(prometheus.CounterOpts{
		Namespace: Namespace, Name: "webhook_deliveries_total",
		Help: "Webhook delivery attempts the receiver acknowledged with a 2xx.",
	})
	m.webhookFailed = prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: Namespace, Name: "webhook_delivery_failures_total",
		Help: "Webhook delivery attempts that failed, by reason: rejected (a non-2xx reply), unreachable (no reply), refused (never sent: a refused address or a missing secret).",
	}, []string{"reason"})
	for _, r := range []WebhookOutcome{WebhookRejected, WebhookUnreachable, WebhookRefused} {
		m.webhookFailed.WithLabelValues(string(r)) // every reason exported from the start, at 0
	}
	m.httpDuration = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Namespace: Namespace, Name: "http_request_duration_seconds",
		Help:    "HTTP requests served, by server, route pattern, method and status.",
		Buckets: []float64{.001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30},
	}, []string{"server", "route", "method", "status"})
	m.reg.MustRegister(m.rateLimited, m.upstream, m.webhookOK, m.webhookFailed, m.httpDuration)

	if db := o.PlatformDB; db != nil {
		m.reg.MustRegister(
			prometheus.NewCounterFunc(prometheus.CounterOpts{
				Namespace: Namespace, Name: "platform_db_statements_total",
				Help: "Statements this process sent the platform's Postgres database (BEGIN and COMMIT included).",
			}, func() float64 { n, _ := db(); return float64(n) }),
			prometheus.NewCounterFunc(prometheus.CounterOpts{
				Namespace: Namespace, Name: "platform_db_transactions_total",
				Help: "Transactions (BEGINs) this process opened on the platform's Postgres database.",
			}, func() float64 { _, n := db(); return float64(n) }),
		)
	}
	if o.Queues != nil {
		m.reg.MustRegister(newQueueCollector(*o.Queues, log))
	}
	if lag := o.OutboxLag; lag != nil {
		m.reg.MustRegister(newScrapeGauge("outbox_oldest_unsent_age_seconds",
			"Age of the oldest outbox row not yet relayed to the queue; 0 when all are sent.",
			func(ctx context.Context) (float64, error) { d, err := lag(ctx); return d.Seconds(), err }, log))
	}
	if live := o.LiveSessions; live != nil {
		m.reg.MustRegister(newScrapeGauge("live_sessions",
			"App sessions that are neither expired nor revoked.",
			func(ctx context.Context) (float64, error) { n, err := live(ctx); return float64(n), err }, log))
	}
	return m
}

// Registry returns the registry, to register a collector of another package.
func (m *Metrics) Registry() *prometheus.Registry { return m.reg }

// Handler serves the registry in the Prometheus text format. A collector
// that fails (Redis down for the queue depths) is left out of that scrape
// and logged; the rest is still served.
func (m *Metrics) Handler() http.Handler {
	return promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{
		ErrorLog:            promLogger{m.log},
		ErrorHandling:       promhttp.ContinueOnError,
		Registry:            m.reg,
		MaxRequestsInFlight: 4,
		Timeout:             2 * ScrapeTimeout,
	})
}

// promLogger adapts slog to promhttp's logger.
type promLogger struct{ log *slog.Logger }

func (l promLogger) Println(v ...any) {
	l.log.Warn("metrics scrape", "error", slog.AnyValue(v).String())
}
