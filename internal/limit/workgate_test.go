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
)

// outcomes records a WorkGate's Observe calls.
type outcomes struct {
	mu   sync.Mutex
	seen map[string]int
}

func (o *outcomes) observe(outcome string, _ time.Duration) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.seen == nil {
		o.seen = map[string]int{}
	}
	o.seen[outcome]++
}

func (o *outcomes) count(outcome string) int {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.seen[outcome]
}

// TestWorkGateLeavesOtherWorkspacesTheirShare: a workspace that floods the
// gate gets its share (1 of the process's 2 runs) and its other runs are
// refused with a retryable 503 after the wait, while another workspace's
// run is admitted at once; a slot freed is taken by a waiter.
func TestWorkGateLeavesOtherWorkspacesTheirShare(t *testing.T) {
	t.Parallel()
	shareRedis(t, func(t *testing.T, rc redis.UniversalClient, prefix string) {
		var seen outcomes
		wait := 150 * time.Millisecond
		gate := limit.NewWorkGate(limit.WorkGateOptions{What: "page renderings", Redis: rc, KeyPrefix: prefix,
			Process: 2, Share: 1, Wait: wait, Observe: seen.observe})
		ctx := context.Background()

		held, err := gate.Acquire(ctx, "ws-flood", time.Minute)
		require.NoError(t, err)
		var wg sync.WaitGroup
		errs := make([]error, 6)
		for i := range errs {
			wg.Add(1)
			go func() {
				defer wg.Done()
				release, err := gate.Acquire(ctx, "ws-flood", time.Minute)
				if err == nil {
					release()
				}
				errs[i] = err
			}()
		}
		start := time.Now()
		other, err := gate.Acquire(ctx, "ws-quiet", time.Minute)
		require.NoError(t, err, "the quiet workspace gets the process's other slot")
		require.Less(t, time.Since(start), wait, "at once, not after the flood's wait")
		require.Equal(t, 2, gate.InUse())
		wg.Wait()
		for _, err := range errs {
			require.Equal(t, apperr.Unavailable, apperr.CodeOf(err), "%v", err)
			require.ErrorIs(t, err, limit.ErrSlotsTaken)
			secs := apperr.RetryAfterSeconds(err)
			require.True(t, secs >= 1 && secs <= 5, "Retry-After %d", secs)
			_, status, msg := apperr.Public(err)
			require.Equal(t, 503, status)
			require.Equal(t, "this workspace already has 1 page renderings in progress, its share; retry", msg)
		}
		require.Equal(t, 6, seen.count(limit.GateRefusedShare))
		require.Equal(t, 2, gate.InUse(), "a refused run holds no process slot")

		// A waiter gets the slot its workspace frees.
		got := make(chan error, 1)
		go func() {
			release, err := gate.Acquire(ctx, "ws-flood", time.Minute)
			if err == nil {
				release()
			}
			got <- err
		}()
		require.Eventually(t, func() bool { return gate.Waiting() == 1 }, time.Second, time.Millisecond)
		held()
		held() // twice does nothing
		require.NoError(t, <-got)
		other()
		require.Zero(t, gate.InUse())
		require.Zero(t, gate.Waiting())
		require.Equal(t, 3, seen.count(limit.GateAdmitted))
	})
}

// TestWorkGateBoundsTheProcess: with every process slot taken, a run of
// any workspace waits and is refused with 503 past the wait, taking no
// slot of its workspace's share; a workspace's share holds across
// processes (two gates on one Redis); a caller that hangs up stops waiting.
func TestWorkGateBoundsTheProcess(t *testing.T) {
	t.Parallel()
	shareRedis(t, func(t *testing.T, rc redis.UniversalClient, prefix string) {
		var seen outcomes
		opts := limit.WorkGateOptions{What: "page renderings", Redis: rc, KeyPrefix: prefix, Process: 1, Share: 1,
			Wait: 100 * time.Millisecond, Observe: seen.observe}
		one, two := limit.NewWorkGate(opts), limit.NewWorkGate(opts)
		ctx := context.Background()

		held, err := one.Acquire(ctx, "ws-a", time.Minute)
		require.NoError(t, err)
		start := time.Now()
		_, err = one.Acquire(ctx, "ws-b", time.Minute)
		require.GreaterOrEqual(t, time.Since(start), 100*time.Millisecond, "it waited first")
		require.Equal(t, apperr.Unavailable, apperr.CodeOf(err))
		require.NotErrorIs(t, err, limit.ErrSlotsTaken)
		require.Equal(t, 1, apperr.RetryAfterSeconds(err))
		_, _, msg := apperr.Public(err)
		require.Equal(t, "too many page renderings in progress; retry", msg)
		require.Equal(t, 1, seen.count(limit.GateRefusedProcess))

		// ws-b's refused run left its share free: it runs on the other replica.
		b, err := two.Acquire(ctx, "ws-b", time.Minute)
		require.NoError(t, err)
		// ws-a's share is fleet-wide: the other replica refuses it too.
		_, err = two.Acquire(ctx, "ws-a", time.Minute)
		require.ErrorIs(t, err, limit.ErrSlotsTaken)
		b()

		cctx, cancel := context.WithCancel(ctx)
		cancel()
		_, err = one.Acquire(cctx, "ws-c", time.Minute)
		require.Equal(t, apperr.Timeout, apperr.CodeOf(err), "%v", err)
		require.Equal(t, 1, seen.count(limit.GateStopped))
		held()

		var none *limit.WorkGate
		release, err := none.Acquire(ctx, "ws-a", time.Minute)
		require.NoError(t, err, "a nil gate admits")
		release()
	})
}
