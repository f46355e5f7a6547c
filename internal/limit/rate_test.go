package limit_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/appruntime/appruntime/internal/apperr"
	"github.com/appruntime/appruntime/internal/limit"
	"github.com/appruntime/appruntime/internal/testkit"
)

// emission is the time GCRA needs to earn back one call at the seed's rate.
const emission = time.Second / limit.SurfaceRatePerSecond

// spend calls Allow until it is refused and returns how many calls passed,
// the refusal and how long the calls took (calls earn budget back meanwhile).
func spend(t *testing.T, ls []*limit.Limiter, surface string) (allowed int, took time.Duration, refusal error) {
	t.Helper()
	start := time.Now()
	for i := 0; i < 1000; i++ {
		if err := ls[i%len(ls)].Allow(context.Background(), surface); err != nil {
			return allowed, time.Since(start), err
		}
		allowed++
	}
	t.Fatal("never refused")
	return
}

// requireBurst checks that allowed is the seed's burst, give or take what
// the time the calls took earned back.
func requireBurst(t *testing.T, allowed int, took time.Duration) {
	t.Helper()
	require.GreaterOrEqual(t, allowed, limit.SurfaceBurst)
	require.LessOrEqual(t, allowed, limit.SurfaceBurst+int(took/emission), "took %s", took)
}

// redisModes are the deployments a test of a Redis user runs on where it
// matters: the shared test Redis, and the shared three-master Cluster.
var redisModes = []struct {
	name string
	env  func(testing.TB) testkit.RedisEnv
}{{"redis", testkit.Redis}, {"cluster", testkit.ClusterRedis}}

func TestBurstThenRefused(t *testing.T) {
	t.Parallel()
	for _, mode := range redisModes {
		t.Run(mode.name, func(t *testing.T) {
			t.Parallel()
			burstThenRefused(t, mode.env(t))
		})
	}
}

func burstThenRefused(t *testing.T, env testkit.RedisEnv) {
	l := limit.NewLimiter(env.Client, env.Prefix)

	allowed, took, err := spend(t, []*limit.Limiter{l}, "step-1")
	requireBurst(t, allowed, took)
	require.Equal(t, apperr.RateLimited, apperr.CodeOf(err))
	var ae *apperr.Error
	require.ErrorAs(t, err, &ae)
	require.Greater(t, ae.RetryAfter, time.Duration(0))
	require.LessOrEqual(t, ae.RetryAfter, emission, "the next call passes one emission interval later")
	require.GreaterOrEqual(t, apperr.RetryAfterSeconds(err), 1, "Retry-After is a whole second at least")
	_, _, msg := apperr.Public(err)
	require.Equal(t, "this surface is calling faster than 5/s sustained (burst 20)", msg)

	require.NoError(t, l.Allow(context.Background(), "step-2"), "every surface has its own budget")

	// One EXISTS per key: on a Cluster the two are in different slots.
	for _, k := range []string{env.Prefix + "rate:surface:step-1", env.Prefix + "rate:surface:step-2"} {
		n, err := env.Client.Exists(context.Background(), k).Result()
		require.NoError(t, err)
		require.Equal(t, int64(1), n, "limiter keys live under the key prefix: %s", k)
	}
	n, err := env.Client.Exists(context.Background(), "rate:"+env.Prefix+"rate:surface:step-1").Result()
	require.NoError(t, err)
	require.Zero(t, n)
}

// leaseMost is the most tokens one replica's lease holds at the seed's
// rate (a quarter of the burst): an idle replica withholds at most
// leaseMost-1 calls from the others (docs/performance.md#the-limiters-lease).
const leaseMost = limit.SurfaceBurst / 4

// A burst spread over two replicas on one Redis admits the shared budget
// and no more: in total at most the burst plus what the elapsed time earned
// back (every admitted call was reserved in Redis first), at least the burst
// less the spare tokens the replicas' leases still hold and a fraction of a
// call per partial grant; neither replica is starved, and every refusal is a
// 429 whose Retry-After is at most one emission interval.
func TestReplicasShareOneBudget(t *testing.T) {
	t.Parallel()
	shareRedis(t, func(t *testing.T, rc redis.UniversalClient, prefix string) {
		ls := []*limit.Limiter{limit.NewLimiter(rc, prefix), limit.NewLimiter(rc, prefix)}
		const calls = 100
		admitted := make([]int, len(ls))
		start := time.Now()
		for i := range calls {
			err := ls[i%len(ls)].Allow(context.Background(), "step-1")
			if err == nil {
				admitted[i%len(ls)]++
				continue
			}
			requireRetryAfter(t, err)
		}
		took := time.Since(start)
		total := admitted[0] + admitted[1]
		t.Logf("admitted %v of %d calls in %s", admitted, calls, took)
		require.LessOrEqual(t, total, limit.SurfaceBurst+int(took/emission), "never more than the shared budget")
		require.GreaterOrEqual(t, total, limit.SurfaceBurst-len(ls)*(leaseMost-1)-1, "at most the leases' spare tokens and a fraction are withheld")
		for i, n := range admitted {
			require.GreaterOrEqual(t, n, total/len(ls)-(leaseMost-1), "replica %d starved", i)
		}
		// What a replica's lease still holds is spent there, then both are
		// refused.
		for _, l := range ls {
			for range leaseMost {
				if l.Allow(context.Background(), "step-1") != nil {
					break
				}
				total++
			}
		}
		require.LessOrEqual(t, total, limit.SurfaceBurst+int(time.Since(start)/emission))
		require.Equal(t, apperr.RateLimited, apperr.CodeOf(ls[0].Allow(context.Background(), "step-1")))
		require.Equal(t, apperr.RateLimited, apperr.CodeOf(ls[1].Allow(context.Background(), "step-1")))
	})
}

// A replica that stops calling withholds at most its lease's spare tokens
// from the other: the other's burst gets the rest of the budget.
func TestAnIdleReplicaWithholdsAtMostItsLease(t *testing.T) {
	t.Parallel()
	shareRedis(t, func(t *testing.T, rc redis.UniversalClient, prefix string) {
		idle, busy := limit.NewLimiter(rc, prefix), limit.NewLimiter(rc, prefix)
		const early = 8 // leases of 1, 2, 4 and 5: 4 spare tokens held
		start := time.Now()
		for i := range early {
			require.NoError(t, idle.Allow(context.Background(), "step-1"), "call %d", i)
		}
		allowed, _, err := spend(t, []*limit.Limiter{busy}, "step-1")
		took := time.Since(start)
		t.Logf("the busy replica got %d after the idle one's %d, in %s", allowed, early, took)
		requireRetryAfter(t, err)
		require.GreaterOrEqual(t, allowed, limit.SurfaceBurst-early-(leaseMost-1)-1)
		require.LessOrEqual(t, early+allowed, limit.SurfaceBurst+int(took/emission))
	})
}

// requireRetryAfter checks that err is the surface rate's 429 whose
// Retry-After is when the next call passes: within one emission interval.
func requireRetryAfter(t *testing.T, err error) {
	t.Helper()
	require.Equal(t, apperr.RateLimited, apperr.CodeOf(err), "%v", err)
	require.ErrorIs(t, err, limit.ErrSurfaceRate)
	var ae *apperr.Error
	require.ErrorAs(t, err, &ae)
	require.Greater(t, ae.RetryAfter, time.Duration(0))
	require.LessOrEqual(t, ae.RetryAfter, emission)
}

func TestSustainedRate(t *testing.T) {
	t.Parallel()
	env := testkit.Redis(t)
	l := limit.NewLimiter(env.Client, env.Prefix)
	_, _, _ = spend(t, []*limit.Limiter{l}, "step-1")

	// With the burst spent, calls pass at the sustained rate only.
	const window = 1200 * time.Millisecond
	start := time.Now()
	passed := 0
	for time.Since(start) < window {
		if l.Allow(context.Background(), "step-1") == nil {
			passed++
		}
		time.Sleep(10 * time.Millisecond)
	}
	elapsed := time.Since(start)
	want := int(elapsed / emission)
	require.InDelta(t, want, passed, 1, "%d calls passed in %s at 5/s", passed, elapsed)
}

func TestSetRate(t *testing.T) {
	t.Parallel()
	env := testkit.Redis(t)
	l := limit.NewLimiter(env.Client, env.Prefix)
	require.Equal(t, limit.SurfaceRate, l.Rate())
	l.SetRate(limit.Rate{PerSecond: 1000, Burst: 200})
	require.Equal(t, limit.Rate{PerSecond: 1000, Burst: 200}, l.Rate())
	for i := range 150 {
		require.NoError(t, l.Allow(context.Background(), "step-1"), "call %d", i)
	}
}

func TestLimiterWithoutRedisIsUnavailable(t *testing.T) {
	t.Parallel()
	rc := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1", MaxRetries: -1, DialTimeout: time.Second})
	t.Cleanup(func() { _ = rc.Close() })
	err := limit.NewLimiter(rc, "x:").Allow(context.Background(), "step-1")
	require.Equal(t, apperr.Unavailable, apperr.CodeOf(err), "%v", err)
}

// Concurrent calls on two replicas share round trips but not the budget:
// of 200 calls at once, the burst passes (plus what the calls took to earn
// back), every other call is a 429 with a Retry-After.
func TestConcurrentCallsKeepTheLimit(t *testing.T) {
	t.Parallel()
	env := testkit.Redis(t)
	ls := []*limit.Limiter{limit.NewLimiter(env.Client, env.Prefix), limit.NewLimiter(env.Client, env.Prefix)}

	const calls = 200
	errs := make(chan error, calls)
	start := time.Now()
	var wg sync.WaitGroup
	for i := range calls {
		wg.Go(func() { errs <- ls[i%2].Allow(context.Background(), "step-1") })
	}
	wg.Wait()
	took := time.Since(start)
	close(errs)
	allowed := 0
	for err := range errs {
		if err == nil {
			allowed++
			continue
		}
		require.Equal(t, apperr.RateLimited, apperr.CodeOf(err), "%v", err)
		var ae *apperr.Error
		require.ErrorAs(t, err, &ae)
		require.Greater(t, ae.RetryAfter, time.Duration(0))
		require.LessOrEqual(t, ae.RetryAfter, emission)
	}
	require.LessOrEqual(t, allowed, limit.SurfaceBurst+int(took/emission), "took %s", took)
	require.GreaterOrEqual(t, allowed, limit.SurfaceBurst-1, "a batch may forfeit a fraction of one call, never more")
	require.Equal(t, apperr.RateLimited, apperr.CodeOf(ls[0].Allow(context.Background(), "step-1")))
}
