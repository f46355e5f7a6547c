package e2e_test

import (
	"io"
	"log/slog"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/appruntime/appruntime/internal/config"
	"github.com/appruntime/appruntime/internal/jobwait"
	"github.com/appruntime/appruntime/internal/limit"
	"github.com/appruntime/appruntime/internal/testkit"
)

// shareConfig gives the script class four slots, two per workspace, and
// an enqueue a short wait for its share.
func shareConfig(c *config.Config) {
	c.QueueConcurrency = map[string]int{"script": 4}
	c.QueueShares = map[string]int{"script": 2}
	c.QueueShareWait = 200 * time.Millisecond
}

// TestRunFairShareBetweenWorkspaces is issue 23's repro: workspace A
// starts 12 long scripts; workspace B's trivial script, through another
// api replica, still starts at once on the shared worker, and A's scripts
// past its share are 429 with Retry-After.
func TestRunFairShareBetweenWorkspaces(t *testing.T) {
	t.Parallel()
	st, rd := testkit.Schema(t), testkit.Redis(t)
	a := newRunStackOn(t, st, rd, true, shareConfig)
	b := newRunStackOn(t, st, rd, false, shareConfig)
	a.pythonDeadline.Store(int64(3 * time.Second)) // the sleeper runs until it

	var wg sync.WaitGroup
	statuses := make(chan reply, 12)
	for range 12 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r, err := a.send("POST", "/api/app-runtime/run", a.token, map[string]any{"op": "sleep", "payload": map[string]any{}})
			if err == nil {
				statuses <- r
			}
		}()
	}
	key := rd.Prefix + "sem:share:" + rd.Queues.Script + ":" + a.tenant.Workspace.ID
	require.Eventually(t, func() bool { return rd.Client.ZCard(t.Context(), key).Val() == 2 }, 5*time.Second, 5*time.Millisecond)

	start := time.Now()
	r := b.run(t, "double", map[string]any{"x": 2})
	took := time.Since(start)
	require.Equal(t, 200, r.Status, string(r.Raw))
	require.Less(t, took, 2*time.Second, "B's trivial script does not wait for A's sleepers (3 s each)")
	t.Logf("B's trivial script answered in %v beside A's 12 sleepers", took)

	wg.Wait()
	close(statuses)
	got := map[int]int{}
	for r := range statuses {
		got[r.Status]++
		if r.Status == 429 {
			require.NotEmpty(t, r.Header.Get("Retry-After"))
		}
	}
	require.Equal(t, map[int]int{504: 2, 429: 10}, got, "A ran its share of two; the rest were refused")
	// The api answers 504 at the job's deadline; the worker frees the slot
	// when it has stopped the sleeper, a moment later on a loaded machine.
	require.Eventually(t, func() bool { return rd.Client.ZCard(t.Context(), key).Val() == 0 },
		5*time.Second, 10*time.Millisecond, "the slots freed when the sleepers ended")
	r = a.run(t, "double", map[string]any{"x": 1})
	require.Equal(t, 200, r.Status, "A runs again once its jobs ended: %s", r.Raw)
}

// TestRunShareWithoutRedis: a share that cannot be counted is 503.
func TestRunShareWithoutRedis(t *testing.T) {
	t.Parallel()
	rs := newRunStack(t)
	rs.P.Runtime.Jobs = rs.unreachableWaiter(t, map[string]int{rs.Redis.Queues.Script: 2})
	r := rs.run(t, "double", map[string]any{"x": 1})
	require.Equal(t, 503, r.Status, string(r.Raw))
	require.NotEmpty(t, r.Header.Get("Retry-After"))
	require.Equal(t, counts{}, rs.counts(t))
}

// unreachableWaiter is a jobwait.Waiter on a Redis where nothing listens;
// shares, when given, are counted there too.
func (rs *runStack) unreachableWaiter(t *testing.T, shares map[string]int) *jobwait.Waiter {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := ln.Addr().String()
	require.NoError(t, ln.Close())
	down := redis.NewClient(&redis.Options{Addr: addr, MaxRetries: -1, DialTimeout: 200 * time.Millisecond})
	t.Cleanup(func() { _ = down.Close() })
	w := jobwait.NewWaiter(down, rs.Redis.Prefix, slog.New(slog.NewTextHandler(io.Discard, nil)))
	t.Cleanup(w.Close)
	if shares != nil {
		w.Share = limit.NewShare(down, rs.Redis.Prefix, shares, time.Second)
	}
	return w
}
