package console_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/hibiken/asynq"
	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/appruntime/appruntime/internal/logging"
	"github.com/appruntime/appruntime/internal/platform"
	"github.com/appruntime/appruntime/internal/queue"
	"github.com/appruntime/appruntime/internal/rdb"
	"github.com/appruntime/appruntime/internal/testkit"
	"github.com/appruntime/appruntime/internal/web"
	"github.com/appruntime/appruntime/jobs"
)

// Task types the queue tests enqueue: a server of processQueue's runs
// "test_ok" to success and fails "test_fail".
const (
	kindOK   = "test_ok"
	kindFail = "test_fail"
)

// enqueue puts a task of kind with payload on queue q, never retried, and
// returns its id.
func enqueue(t *testing.T, rc redis.UniversalClient, q, kind, payload string, opts ...asynq.Option) string {
	t.Helper()
	cl := asynq.NewClientFromRedisClient(rc)
	ti, err := cl.Enqueue(asynq.NewTask(kind, []byte(payload)), append([]asynq.Option{asynq.Queue(q), asynq.MaxRetry(0)}, opts...)...)
	require.NoError(t, err)
	return ti.ID
}

// processQueue runs ok tasks that succeed and failed tasks that fail
// through a real asynq server on queue q and waits for today's counts to
// show them all.
func processQueue(t *testing.T, rc redis.UniversalClient, q string, ok, failed int) {
	t.Helper()
	for i := 0; i < ok; i++ {
		enqueue(t, rc, q, kindOK, fmt.Sprintf(`{"n":%d}`, i))
	}
	for i := 0; i < failed; i++ {
		enqueue(t, rc, q, kindFail, fmt.Sprintf(`{"n":%d}`, i))
	}
	srv := asynq.NewServerFromRedisClient(rc, asynq.Config{Queues: map[string]int{q: 1}, Concurrency: 2,
		LogLevel: asynq.FatalLevel, HealthCheckInterval: time.Hour})
	mux := asynq.NewServeMux()
	mux.HandleFunc(kindOK, func(context.Context, *asynq.Task) error { return nil })
	mux.HandleFunc(kindFail, func(context.Context, *asynq.Task) error { return fmt.Errorf("the test fails it") })
	require.NoError(t, srv.Start(mux))
	insp := asynq.NewInspectorFromRedisClient(rc)
	require.Eventually(t, func() bool {
		qi, err := insp.GetQueueInfo(q)
		return err == nil && qi.Processed == ok+failed && qi.Failed == failed && qi.Active == 0
	}, 30*time.Second, 50*time.Millisecond, "the server processes the tasks")
	srv.Shutdown()
}

// todaysBar matches the chart's bar for today.
func todaysBar(processed, failed int) string {
	return fmt.Sprintf(`data-day="%s" data-processed="%d" data-failed="%d"`, time.Now().UTC().Format("2006-01-02"), processed, failed)
}

// TestQueueHistoryChartLatencyAndMemory: after real asynq runs (3 that
// succeed, 2 that fail) the queue's view charts today's counts as a
// 14-day inline SVG with today's bar at 5 processed, 2 failed, and shows
// the latency and memory of the queue.
func TestQueueHistoryChartLatencyAndMemory(t *testing.T) {
	t.Parallel()
	c := newTestConsole(t)
	q := c.P.Queues.Lookup
	processQueue(t, c.P.Redis, q, 3, 2)
	enqueue(t, c.P.Redis, q, kindOK, `{}`) // a pending task: a latency

	cl := c.signedIn(t)
	p := cl.get("/queues?queue=" + url.QueryEscape(q))
	require.Equal(t, http.StatusOK, p.Status, p.Body)
	require.Contains(t, p.Body, `<figure id="history" data-processed="5" data-failed="2">`)
	require.Contains(t, p.Body, todaysBar(5, 2))
	require.Equal(t, queue.HistoryDays, strings.Count(p.Body, `<g class="day"`))
	require.NotContains(t, p.Body, `id="history-unavailable"`)
	require.Regexp(t, `id="queue-stats">Latency \(oldest pending task\): <span class="latency">[0-9.]+(ms|µs|s)</span> · memory in Redis: <span class="memory">[0-9.]+ (B|KiB|MiB)</span>`, p.Body)
	// The queue's row of the table has the memory too.
	require.Regexp(t, regexp.MustCompile(`(?s)data-queue="`+regexp.QuoteMeta(q)+`".*?<td class="memory">[0-9.]+ (B|KiB|MiB)</td>`), p.Body)

	// A queue that never had a task charts 14 empty days.
	p = cl.get("/queues?queue=" + url.QueryEscape(c.P.Queues.Extract))
	require.Equal(t, http.StatusOK, p.Status, p.Body)
	require.Contains(t, p.Body, todaysBar(0, 0))
	require.Contains(t, p.Body, `data-processed="0" data-failed="0">`)

	// An unknown queue is not found.
	require.Equal(t, http.StatusNotFound, cl.get("/queues?queue=nope").Status)
}

// TestQueuePagesInDevMode: the dev mode's in-process Redis (miniredis) runs
// the scripts asynq reads daily counts and memory with, so the chart, the
// memory and a task's page work there as on a real Redis.
func TestQueuePagesInDevMode(t *testing.T) {
	t.Parallel()
	c := newDevConsole(t)
	q := c.P.Queues.Lookup
	processQueue(t, c.P.Redis, q, 2, 1)
	id := enqueue(t, c.P.Redis, q, kindOK, `{"x":1}`)

	cl := c.signedIn(t)
	p := cl.get("/queues?queue=" + url.QueryEscape(q))
	require.Equal(t, http.StatusOK, p.Status, p.Body)
	require.Contains(t, p.Body, todaysBar(3, 1))
	require.NotContains(t, p.Body, "not available on this Redis")
	require.Regexp(t, `<span class="memory">[0-9.]+ (B|KiB|MiB)</span>`, p.Body)
	p = cl.get("/queues/" + url.PathEscape(q) + "/tasks/" + id)
	require.Equal(t, http.StatusOK, p.Status, p.Body)
	require.Contains(t, p.Body, `&#34;x&#34;: 1`)
}

// newDevConsole is a console in the dev mode: SQLite and an in-process
// Redis (miniredis), with the tenant's admin an operator.
func newDevConsole(t *testing.T) *testConsole {
	t.Helper()
	emb, err := rdb.StartEmbedded()
	require.NoError(t, err)
	t.Cleanup(emb.Close)
	rc, err := rdb.Open(context.Background(), emb.URL)
	require.NoError(t, err)
	t.Cleanup(func() { _ = rc.Close() })
	st := testkit.SQLite(t)
	ln, err := web.Listen("127.0.0.1:0")
	require.NoError(t, err)
	c := &testConsole{URL: "http://" + ln.Addr().String(), Store: st}
	cfg := testkit.Config(testkit.DatabaseURL(), emb.URL)
	cfg.ConsoleURL = c.URL
	c.P, err = platform.New(context.Background(), platform.Options{
		Config: cfg, Log: logging.New(io.Discard, slog.LevelError), Store: st, Redis: rc, KeyPrefix: "dev:", Queues: jobs.PrefixedQueues("dev_"),
	})
	require.NoError(t, err)
	t.Cleanup(c.P.Close)
	c.Tenant = testkit.NewTenant(t, st.DB)
	c.P.Config.OperatorUserIDs = []string{c.Tenant.Admin.ID}
	serve(t, mustConsole(t, c.P), ln)
	return c
}

// newOperatorConsole is newTestConsole with the tenant's admin one of the
// deployment's operators (who may act on the queues).
func newOperatorConsole(t *testing.T) *testConsole {
	t.Helper()
	return operatorView(t, newTestConsole(t))
}

// operatorView serves a second console on c's platform with c's admin one
// of the deployment's operators.
func operatorView(t *testing.T, c *testConsole) *testConsole {
	t.Helper()
	c.P.Config.OperatorUserIDs = []string{c.Tenant.Admin.ID}
	ln, err := web.Listen("127.0.0.1:0")
	require.NoError(t, err)
	serve(t, mustConsole(t, c.P), ln)
	op := *c
	op.URL = "http://" + ln.Addr().String()
	return &op
}
