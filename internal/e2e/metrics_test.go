package e2e_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/appruntime/appruntime/internal/limit"
	"github.com/appruntime/appruntime/internal/metrics"
	"github.com/appruntime/appruntime/internal/testkit"
	"github.com/appruntime/appruntime/internal/web"
)

// serveMetrics serves the platform's registry as `appruntime api` does on
// METRICS_ADDR and returns its /metrics URL.
func serveMetrics(t *testing.T, s *stack) string {
	t.Helper()
	ln, err := web.Listen("127.0.0.1:0")
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- metrics.Serve(ctx, ln, s.P.Metrics.Handler(), time.Second) }()
	t.Cleanup(func() { cancel(); require.NoError(t, <-done) })
	return "http://" + ln.Addr().String() + metrics.Path
}

func verbSeries(verb, kind, status string) string {
	return `appruntime_runtime_verb_duration_seconds_count{kind="` + kind + `",status="` + status + `",verb="` + verb + `"}`
}

func jobSeries(kind, outcome string) string {
	return `appruntime_job_duration_seconds_count{kind="` + kind + `",outcome="` + outcome + `"}`
}

func dsSeries(statement string) string {
	return `appruntime_datasource_query_duration_seconds_count{driver="postgres",outcome="ok",statement="` + statement + `"}`
}

// TestMetricsCountTheVerbsAndJobsOfAReview plays a review (reads, a write,
// an approval, calls refused with 403, 409 and 429), lets the worker carry
// out the resume event and its webhook, and checks that each series moved
// by exactly what happened.
func TestMetricsCountTheVerbsAndJobsOfAReview(t *testing.T) {
	t.Parallel()
	s := newStack(t)
	startWorker(t, s.P)
	hook := newReceiver(t)
	st := setUp(t, s, hook)
	url := serveMetrics(t, s)
	before := testkit.Scrape(t, url)
	require.Equal(t, 1.0, before["appruntime_live_sessions"], "the story minted one session")
	require.Contains(t, before, `appruntime_queue_depth{queue="`+s.Redis.Queues.Events+`",state="pending"}`)

	for _, filters := range []map[string]any{{}, {"vendor": "ACME Corp"}} {
		r := st.verb(t, s, "read", "list_invoices", map[string]any{"filters": filters})
		require.Equal(t, 200, r.Status, string(r.Raw))
	}
	r := st.verb(t, s, "read", "no_such_op", map[string]any{})
	require.Equal(t, 403, r.Status, string(r.Raw))
	r = st.verb(t, s, "write", "set_status", map[string]any{"row": map[string]any{"id": 2, "status": "on_hold"}})
	require.Equal(t, 200, r.Status, string(r.Raw))
	r = st.approve(t, s)
	require.Equal(t, 200, r.Status, string(r.Raw))
	taskStatus(t, s, st)
	r = st.approve(t, s)
	require.Equal(t, 409, r.Status, "the await is settled: %s", r.Raw)

	// A surface allowed one call a second: approving again is refused with
	// 409 while the budget lasts (it may already be spent), then with 429.
	s.P.Limiter.SetRate(limit.Rate{PerSecond: 1, Burst: 1})
	refused := map[int]int{}
	for refused[429] == 0 {
		r = st.approve(t, s)
		require.Contains(t, []int{409, 429}, r.Status, string(r.Raw))
		refused[r.Status]++
	}
	hook.waitOne(t)

	want := map[string]float64{
		verbSeries("read", "rows", "200"):                                           2,
		verbSeries("read", "none", "403"):                                           1,
		verbSeries("write", "write", "200"):                                         1,
		verbSeries("action", "action", "200"):                                       1,
		verbSeries("action", "action", "429"):                                       1,
		`appruntime_runtime_rate_limited_total{class="surface_rate",verb="action"}`: 1,
		dsSeries("select"):                                                          2,
		`appruntime_http_request_duration_seconds_count{method="GET",route="/api/agent/tasks/:id",server="api",status="200"}`: 1,
		jobSeries("resume_event", "succeeded"):                                              1,
		jobSeries("webhook_delivery", "succeeded"):                                          1,
		`appruntime_webhook_deliveries_total`:                                               1,
		`appruntime_webhook_delivery_failures_total{reason="rejected"}`:                     0,
		`appruntime_gateway_upstream_duration_seconds_count{client="webhook",status="2xx"}`: 1,
	}
	want[verbSeries("action", "action", "409")] = float64(1 + refused[409])
	// The job series are recorded when the handler returns, just after the
	// receiver answered.
	var after map[string]float64
	require.Eventually(t, func() bool {
		after = testkit.Scrape(t, url)
		return after[jobSeries("webhook_delivery", "succeeded")]-before[jobSeries("webhook_delivery", "succeeded")] >= 1
	}, eventually, poll)
	testkit.RequireMoved(t, before, after, want)
}
