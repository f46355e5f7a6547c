package metrics_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gofiber/fiber/v2"
	"github.com/hibiken/asynq"
	"github.com/prometheus/client_golang/prometheus/testutil/promlint"
	"github.com/stretchr/testify/require"

	"github.com/appruntime/appruntime/internal/apperr"
	"github.com/appruntime/appruntime/internal/metrics"
	"github.com/appruntime/appruntime/internal/testkit"
)

var capabilities = []string{"file_preview", "list_files", "split_document", "get_translation"}

const (
	verbSeries = "appruntime_runtime_verb_duration_seconds"
	jobSeries  = "appruntime_job_duration_seconds"
)

// TestScrapeAfterVerbsAndJobs observes runtime verbs, runs jobs through a
// real asynq server on Redis, serves HTTP requests, and checks that a
// scrape of the metrics server shows each series moved by exactly that much.
func TestScrapeAfterVerbsAndJobs(t *testing.T) {
	t.Parallel()
	rd := testkit.Redis(t)
	m := metrics.New(metrics.Options{Capabilities: capabilities})
	url := serve(t, m)
	before := scrape(t, url)

	for range 3 {
		m.ObserveVerb("read", metrics.KindRows, 200, 2*time.Millisecond)
	}
	m.ObserveVerb("read", metrics.KindHTTP, 429, time.Millisecond)
	m.ObserveVerb("action", metrics.KindAction, 502, 40*time.Millisecond)
	m.ObserveVerb("capability", "list_files", 200, 5*time.Millisecond)
	m.ObserveVerb("capability", "teleport", 403, time.Millisecond) // a name a bundle made up
	m.ObserveVerb("write", "", 401, time.Millisecond)
	m.ObserveVerb("read", metrics.KindRows, 418, time.Millisecond) // a status with no cached child
	m.ObserveRateLimited(metrics.LimitSurfaceRate, "read")
	m.ObserveRateLimited(metrics.LimitSurfaceRate, "read")
	m.ObserveRateLimited(metrics.LimitExtractionSlots, "run")
	m.ObserveDataSource("postgres", metrics.StatementSelect, false, time.Millisecond)
	m.ObserveDataSource("postgres", metrics.StatementWrite, true, time.Millisecond)
	m.ObserveWebhookAttempt(metrics.WebhookDelivered)
	m.ObserveWebhookAttempt(metrics.WebhookRejected)
	m.ObserveWebhookAttempt(metrics.WebhookRejected)
	m.ObserveWebhookAttempt(metrics.WebhookUnreachable)

	runJobs(t, rd, m)
	serveHTTP(t, m)

	after := scrape(t, url)
	requireMoved(t, before, after, map[string]float64{
		verbSeries + `_count{kind="rows",status="200",verb="read"}`:                                                     3,
		verbSeries + `_count{kind="http",status="429",verb="read"}`:                                                     1,
		verbSeries + `_count{kind="action",status="502",verb="action"}`:                                                 1,
		verbSeries + `_count{kind="list_files",status="200",verb="capability"}`:                                         1,
		verbSeries + `_count{kind="other",status="403",verb="capability"}`:                                              1,
		verbSeries + `_count{kind="none",status="401",verb="write"}`:                                                    1,
		verbSeries + `_count{kind="rows",status="418",verb="read"}`:                                                     1,
		`appruntime_runtime_rate_limited_total{class="surface_rate",verb="read"}`:                                       2,
		`appruntime_runtime_rate_limited_total{class="extraction_slots",verb="run"}`:                                    1,
		`appruntime_datasource_query_duration_seconds_count{driver="postgres",outcome="ok",statement="select"}`:         1,
		`appruntime_datasource_query_duration_seconds_count{driver="postgres",outcome="error",statement="write"}`:       1,
		`appruntime_webhook_deliveries_total`:                                                                           1,
		`appruntime_webhook_delivery_failures_total{reason="rejected"}`:                                                 2,
		`appruntime_webhook_delivery_failures_total{reason="unreachable"}`:                                              1,
		`appruntime_webhook_delivery_failures_total{reason="refused"}`:                                                  0,
		jobSeries + `_count{kind="ok",outcome="succeeded"}`:                                                             2,
		jobSeries + `_count{kind="broken",outcome="failed"}`:                                                            1,
		jobSeries + `_count{kind="last_try",outcome="failed"}`:                                                          1,
		jobSeries + `_count{kind="flaky",outcome="retried"}`:                                                            1,
		jobSeries + `_count{kind="slow",outcome="canceled"}`:                                                            1,
		`appruntime_http_request_duration_seconds_count{method="GET",route="/api/tasks/:id",server="api",status="200"}`: 2,
		`appruntime_http_request_duration_seconds_count{method="GET",route="/api/tasks/:id",server="api",status="404"}`: 1,
		`appruntime_http_request_duration_seconds_count{method="POST",route="/api/tasks",server="api",status="429"}`:    1,
		`appruntime_http_request_duration_seconds_count{method="GET",route="unmatched",server="api",status="404"}`:      2,
	})
	require.InDelta(t, 0.006+0.040, after[verbSeries+`_sum{kind="rows",status="200",verb="read"}`]+after[verbSeries+`_sum{kind="action",status="502",verb="action"}`], 1e-9,
		"the histogram sums the durations, in seconds")
	for k := range after {
		require.NotContains(t, k, "teleport", "a made-up capability never becomes a label value")
		require.NotContains(t, k, "/api/nope", "a raw path never becomes a label value")
	}
	require.Contains(t, after, "go_goroutines")
	require.Contains(t, after, "process_resident_memory_bytes")
}

// runJobs runs five kinds of job through an asynq server with the metrics
// middleware and waits until each has run the expected number of times.
func runJobs(t *testing.T, rd testkit.RedisEnv, m *metrics.Metrics) {
	t.Helper()
	var runs atomic.Int32
	mux := asynq.NewServeMux()
	mux.Use(m.JobMiddleware)
	count := func(h func(context.Context) error) asynq.HandlerFunc {
		return func(ctx context.Context, _ *asynq.Task) error { defer runs.Add(1); return h(ctx) }
	}
	mux.Handle("ok", count(func(context.Context) error { return nil }))
	mux.Handle("broken", count(func(context.Context) error { return errors.Join(errors.New("bad payload"), asynq.SkipRetry) }))
	mux.Handle("last_try", count(func(context.Context) error { return errors.New("upstream down") }))
	mux.Handle("flaky", count(func(context.Context) error { return errors.New("upstream down") }))
	mux.Handle("slow", count(func(ctx context.Context) error { <-ctx.Done(); return ctx.Err() }))
	srv := asynq.NewServerFromRedisClient(rd.Client, asynq.Config{
		Concurrency: 4, Queues: map[string]int{rd.Queues.Lookup: 1},
		TaskCheckInterval: 20 * time.Millisecond, LogLevel: asynq.FatalLevel,
		// No retry comes due during the test: a "retried" run is counted once.
		RetryDelayFunc: func(int, error, *asynq.Task) time.Duration { return time.Hour },
	})
	require.NoError(t, srv.Start(mux))
	t.Cleanup(srv.Shutdown)

	client := asynq.NewClientFromRedisClient(rd.Client)
	enqueue := func(kind string, opts ...asynq.Option) {
		_, err := client.Enqueue(asynq.NewTask(kind, nil), append(opts, asynq.Queue(rd.Queues.Lookup))...)
		require.NoError(t, err)
	}
	enqueue("ok")
	enqueue("ok")
	enqueue("broken", asynq.MaxRetry(5))
	enqueue("last_try", asynq.MaxRetry(0))
	enqueue("flaky", asynq.MaxRetry(3))
	enqueue("slow", asynq.MaxRetry(0), asynq.Timeout(time.Second)) // asynq counts whole seconds
	require.Eventually(t, func() bool { return runs.Load() == 6 }, 15*time.Second, 10*time.Millisecond, "runs: %d", &runs)
	// The middleware records after the handler returns.
	time.Sleep(50 * time.Millisecond)
}

// serveHTTP sends requests through a Fiber app with the HTTP middleware.
func serveHTTP(t *testing.T, m *metrics.Metrics) {
	t.Helper()
	app := fiber.New(fiber.Config{ErrorHandler: func(c *fiber.Ctx, err error) error {
		var fe *fiber.Error
		if errors.As(err, &fe) {
			return c.SendStatus(fe.Code)
		}
		_, status, _ := apperr.Public(err)
		return c.SendStatus(status)
	}})
	app.Use(m.HTTP("api"))
	app.Get("/api/tasks/:id", func(c *fiber.Ctx) error {
		if c.Params("id") == "missing" {
			return apperr.NotFoundf("no such task")
		}
		return c.SendString("ok")
	})
	app.Post("/api/tasks", func(*fiber.Ctx) error { return apperr.New(apperr.RateLimited, "slow down") })
	for path, method := range map[string]string{"/api/tasks/1": "GET", "/api/tasks/2": "GET", "/api/tasks/missing": "GET", "/api/tasks": "POST", "/api/nope": "GET", "/api/nope/deeper": "GET"} {
		res, err := app.Test(httptest.NewRequest(method, path, nil))
		require.NoError(t, err)
		_ = res.Body.Close()
	}
}

// TestMetricNamesFollowTheConventions runs Prometheus's own linter over
// every appruntime metric: base units, _total on counters, no reserved
// suffixes on gauges, help text everywhere.
func TestMetricNamesFollowTheConventions(t *testing.T) {
	t.Parallel()
	rd := testkit.Redis(t)
	m := metrics.New(metrics.Options{
		Capabilities: capabilities,
		Queues:       &metrics.QueueSource{Inspector: asynq.NewInspectorFromRedisClient(rd.Client), Queues: []string{rd.Queues.Events}},
		OutboxLag:    func(context.Context) (time.Duration, error) { return 0, nil },
		LiveSessions: func(context.Context) (int, error) { return 0, nil },
		PlatformDB:   func() (uint64, uint64) { return 3, 1 },
	})
	// Every vector gets a child, so its family is exported.
	m.ObserveVerb("read", metrics.KindRows, 200, time.Millisecond)
	m.ObserveDataSource("postgres", metrics.StatementSelect, false, time.Millisecond)
	m.ObserveRateLimited(metrics.LimitSurfaceRate, "read")
	m.ObserveJob(context.Background(), "summary", nil, time.Millisecond)
	m.ObserveWebhookAttempt(metrics.WebhookDelivered)
	_ = m.Transport("webhook", nil)
	serveHTTP(t, m)

	families, err := m.Registry().Gather()
	require.NoError(t, err)
	var ours []string
	for _, f := range families {
		if strings.HasPrefix(f.GetName(), metrics.Namespace+"_") {
			ours = append(ours, f.GetName())
		}
	}
	require.ElementsMatch(t, []string{
		"appruntime_runtime_verb_duration_seconds", "appruntime_runtime_rate_limited_total",
		"appruntime_datasource_query_duration_seconds", "appruntime_gateway_upstream_duration_seconds",
		"appruntime_job_duration_seconds", "appruntime_queue_depth", "appruntime_queue_latency_seconds",
		"appruntime_queue_paused", "appruntime_queue_processed_total", "appruntime_queue_failed_total",
		"appruntime_outbox_oldest_unsent_age_seconds", "appruntime_webhook_deliveries_total",
		"appruntime_webhook_delivery_failures_total", "appruntime_live_sessions",
		"appruntime_http_request_duration_seconds",
		"appruntime_platform_db_statements_total", "appruntime_platform_db_transactions_total",
	}, ours, "docs/operators.md#metrics lists exactly these")
	problems, err := promlint.NewWithMetricFamilies(families).Lint()
	require.NoError(t, err)
	require.Empty(t, problems)
}

func TestQueueDepthAndLatency(t *testing.T) {
	t.Parallel()
	rd := testkit.Redis(t)
	inspector := asynq.NewInspectorFromRedisClient(rd.Client)
	client := asynq.NewClientFromRedisClient(rd.Client)
	for range 3 {
		_, err := client.Enqueue(asynq.NewTask("summary", nil), asynq.Queue(rd.Queues.Events))
		require.NoError(t, err)
	}
	_, err := client.Enqueue(asynq.NewTask("summary", nil), asynq.Queue(rd.Queues.Events), asynq.ProcessIn(time.Hour))
	require.NoError(t, err)
	require.NoError(t, inspector.PauseQueue(rd.Queues.Events))
	time.Sleep(1100 * time.Millisecond) // the oldest pending task is over a second old

	m := metrics.New(metrics.Options{Queues: &metrics.QueueSource{Inspector: inspector, Queues: []string{rd.Queues.Events, rd.Queues.Script}}})
	got := scrape(t, serve(t, m))
	events, script := `queue="`+rd.Queues.Events+`"`, `queue="`+rd.Queues.Script+`"`
	require.Equal(t, 3.0, got[`appruntime_queue_depth{`+events+`,state="pending"}`])
	require.Equal(t, 1.0, got[`appruntime_queue_depth{`+events+`,state="scheduled"}`])
	require.Equal(t, 0.0, got[`appruntime_queue_depth{`+events+`,state="active"}`])
	require.Equal(t, 1.0, got[`appruntime_queue_paused{`+events+`}`])
	require.GreaterOrEqual(t, got[`appruntime_queue_latency_seconds{`+events+`}`], 1.0)
	require.Contains(t, got, `appruntime_queue_depth{`+script+`,state="pending"}`, "a queue never used reads as empty")
	require.Equal(t, 0.0, got[`appruntime_queue_paused{`+script+`}`])
}

// TestScrapeTimeReads: outbox lag and live sessions are read on scrape,
// at most once per ScrapeCacheTTL; one that fails is left out of that
// scrape, and the rest is served.
func TestScrapeTimeReads(t *testing.T) {
	t.Parallel()
	var lagReads, sessionReads atomic.Int32
	m := metrics.New(metrics.Options{
		OutboxLag: func(context.Context) (time.Duration, error) {
			lagReads.Add(1)
			return 90 * time.Second, nil
		},
		LiveSessions: func(context.Context) (int, error) {
			sessionReads.Add(1)
			return 0, errors.New("database down")
		},
	})
	url := serve(t, m)
	got := scrape(t, url)
	require.Equal(t, 90.0, got["appruntime_outbox_oldest_unsent_age_seconds"])
	require.NotContains(t, got, "appruntime_live_sessions", "a failed read leaves the series out")
	require.Contains(t, got, "go_goroutines", "the rest is served")
	scrape(t, url)
	require.Equal(t, int32(1), lagReads.Load(), "a second scrape within the TTL reuses the value")
	require.Equal(t, int32(1), sessionReads.Load(), "and the error")
}

func TestTransportRecordsStatusClasses(t *testing.T) {
	t.Parallel()
	upstream := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/down" {
			w.WriteHeader(http.StatusServiceUnavailable)
		}
	}))
	t.Cleanup(upstream.Close)
	closed := httptest.NewServer(http.NotFoundHandler())
	closed.Close()

	m := metrics.New(metrics.Options{})
	client := &http.Client{Transport: m.Transport("http_call", upstream.Client().Transport)}
	for _, u := range []string{upstream.URL + "/ok", upstream.URL + "/ok", upstream.URL + "/down", closed.URL} {
		res, err := client.Get(u)
		if err == nil {
			_ = res.Body.Close()
		}
	}
	got := scrape(t, serve(t, m))
	const s = "appruntime_gateway_upstream_duration_seconds_count"
	require.Equal(t, 2.0, got[s+`{client="http_call",status="2xx"}`])
	require.Equal(t, 1.0, got[s+`{client="http_call",status="5xx"}`])
	require.Equal(t, 1.0, got[s+`{client="http_call",status="error"}`])
}

func TestServeAnswersOnlyMetrics(t *testing.T) {
	t.Parallel()
	url := serve(t, metrics.New(metrics.Options{}))
	for path, want := range map[string]int{"/metrics": 200, "/": 404, "/debug/pprof/": 404} {
		res, err := http.Get(strings.TrimSuffix(url, metrics.Path) + path)
		require.NoError(t, err)
		_ = res.Body.Close()
		require.Equal(t, want, res.StatusCode, path)
	}
	res, err := http.Post(url, "text/plain", nil)
	require.NoError(t, err)
	_ = res.Body.Close()
	require.Equal(t, http.StatusMethodNotAllowed, res.StatusCode)
}

// TestANilMetricsRecordsNothing: code instrumented with a nil *Metrics (the
// metrics server is off) runs unchanged.
func TestANilMetricsRecordsNothing(t *testing.T) {
	t.Parallel()
	var m *metrics.Metrics
	m.ObserveVerb("read", metrics.KindRows, 200, time.Millisecond)
	m.ObserveRateLimited(metrics.LimitSurfaceRate, "read")
	m.ObserveDataSource("postgres", metrics.StatementSelect, false, time.Millisecond)
	m.ObserveJob(context.Background(), "summary", nil, time.Millisecond)
	m.ObserveWebhookAttempt(metrics.WebhookDelivered)
	require.Equal(t, http.DefaultTransport, m.Transport("webhook", nil))
	h := asynq.HandlerFunc(func(context.Context, *asynq.Task) error { return nil })
	require.NoError(t, m.JobMiddleware(h).ProcessTask(context.Background(), asynq.NewTask("summary", nil)))
	app := fiber.New()
	app.Use(m.HTTP("api"))
	app.Get("/", func(c *fiber.Ctx) error { return c.SendString("ok") })
	res, err := app.Test(httptest.NewRequest("GET", "/", nil))
	require.NoError(t, err)
	require.Equal(t, 200, res.StatusCode)
}

// TestTheHotPathDoesNotAllocate is the rule BenchmarkObserveVerb measures,
// as a test that fails: once a combination has been seen, recording a verb
// or a data-source statement allocates nothing.
func TestTheHotPathDoesNotAllocate(t *testing.T) {
	m := metrics.New(metrics.Options{Capabilities: capabilities})
	m.ObserveVerb("read", metrics.KindRows, 200, time.Millisecond)
	m.ObserveVerb("capability", "list_files", 403, time.Millisecond)
	m.ObserveDataSource("postgres", metrics.StatementSelect, false, time.Millisecond)
	allocs := testing.AllocsPerRun(1000, func() {
		m.ObserveVerb("read", metrics.KindRows, 200, time.Millisecond)
		m.ObserveVerb("capability", "list_files", 403, time.Millisecond)
		m.ObserveDataSource("postgres", metrics.StatementSelect, false, time.Millisecond)
	})
	require.Zero(t, allocs)
}
