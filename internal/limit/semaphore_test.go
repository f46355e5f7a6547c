package limit_test

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/appruntime/appruntime/internal/apperr"
	"github.com/appruntime/appruntime/internal/limit"
	"github.com/appruntime/appruntime/internal/testkit"
)

func TestSemaphoreAdmitsTwo(t *testing.T) {
	t.Parallel()
	for _, mode := range redisModes {
		t.Run(mode.name, func(t *testing.T) {
			t.Parallel()
			semaphoreAdmitsTwo(t, mode.env(t))
		})
	}
}

func semaphoreAdmitsTwo(t *testing.T, env testkit.RedisEnv) {
	sem := limit.NewSemaphore(env.Client, env.Prefix, "extract", limit.ExtractionSlotsPerSurface, limit.ExtractionHold)
	ctx := context.Background()

	r1, err := sem.Acquire(ctx, "step-1")
	require.NoError(t, err)
	r2, err := sem.Acquire(ctx, "step-1")
	require.NoError(t, err)
	_, err = sem.Acquire(ctx, "step-1")
	require.Equal(t, apperr.RateLimited, apperr.CodeOf(err))
	var ae *apperr.Error
	require.ErrorAs(t, err, &ae)
	require.Equal(t, limit.SemaphoreRetryAfter, ae.RetryAfter)
	require.Equal(t, 5, apperr.RetryAfterSeconds(err))
	_, _, msg := apperr.Public(err)
	require.Equal(t, "this surface already runs 2 of these at once", msg)

	other, err := sem.Acquire(ctx, "step-2")
	require.NoError(t, err, "another surface has slots of its own")
	other()

	r1()
	r1() // a second release must not free the other holder's slot
	r3, err := sem.Acquire(ctx, "step-1")
	require.NoError(t, err, "a released slot admits again")
	_, err = sem.Acquire(ctx, "step-1")
	require.Equal(t, apperr.RateLimited, apperr.CodeOf(err), "the double release freed only one slot")
	r2()
	r3()

	n, err := env.Client.ZCard(ctx, env.Prefix+"sem:extract:step-1").Result()
	require.NoError(t, err)
	require.Zero(t, n, "released slots leave no entries")
}

func TestSemaphoreSlotOfADeadHolderExpires(t *testing.T) {
	t.Parallel()
	env := testkit.Redis(t)
	const hold = 300 * time.Millisecond
	sem := limit.NewSemaphore(env.Client, env.Prefix, "extract", 2, hold)
	ctx := context.Background()

	// Two holders that never release (their process died).
	_, err := sem.Acquire(ctx, "step-1")
	require.NoError(t, err)
	_, err = sem.Acquire(ctx, "step-1")
	require.NoError(t, err)
	_, err = sem.Acquire(ctx, "step-1")
	var ae *apperr.Error
	require.ErrorAs(t, err, &ae)
	require.Equal(t, apperr.RateLimited, ae.Code)
	require.LessOrEqual(t, ae.RetryAfter, hold, "the wait is bounded by the earliest entry's expiry")

	time.Sleep(hold + 100*time.Millisecond)
	release, err := sem.Acquire(ctx, "step-1")
	require.NoError(t, err, "expired entries no longer hold a slot")
	release()
	ttl, err := env.Client.PTTL(ctx, env.Prefix+"sem:extract:step-1").Result()
	require.NoError(t, err)
	require.LessOrEqual(t, ttl, hold, "the key itself expires with its last entry")
}

func TestSemaphoreUnderContention(t *testing.T) {
	t.Parallel()
	env := testkit.Redis(t)
	sem := limit.NewSemaphore(env.Client, env.Prefix, "extract", 2, time.Minute)
	var admitted, refused atomic.Int32
	var wg sync.WaitGroup
	releases := make(chan func(), 20)
	for range 20 {
		wg.Go(func() {
			release, err := sem.Acquire(context.Background(), "step-1")
			if err != nil {
				refused.Add(1)
				return
			}
			admitted.Add(1)
			releases <- release
		})
	}
	wg.Wait()
	close(releases)
	require.Equal(t, int32(2), admitted.Load(), "never more than two at once across concurrent callers")
	require.Equal(t, int32(18), refused.Load())
	for r := range releases {
		r()
	}
}

// TestSemaphoreSlotExpiresAtItsDeadline: a holder that never releases
// frees its slot at the deadline it was acquired until, and a shorter
// deadline never shortens a longer holder's entry.
func TestSemaphoreSlotExpiresAtItsDeadline(t *testing.T) {
	t.Parallel()
	env := testkit.Redis(t)
	sem := limit.NewSemaphore(env.Client, env.Prefix, "extract", limit.ExtractionSlotsPerSurface, limit.ExtractionHold)
	ctx := context.Background()
	long, err := sem.AcquireUntil(ctx, "s", time.Now().Add(time.Minute))
	require.NoError(t, err)
	defer long()
	_, err = sem.AcquireUntil(ctx, "s", time.Now().Add(300*time.Millisecond)) // never released
	require.NoError(t, err)
	_, err = sem.AcquireUntil(ctx, "s", time.Now().Add(time.Minute))
	require.Equal(t, apperr.RateLimited, apperr.CodeOf(err), "both slots are taken")
	require.Eventually(t, func() bool {
		release, err := sem.AcquireUntil(ctx, "s", time.Now().Add(time.Minute))
		if err == nil {
			release()
		}
		return err == nil
	}, 3*time.Second, 50*time.Millisecond, "the abandoned slot frees at its deadline")
	_, err = sem.AcquireUntil(ctx, "s", time.Now().Add(time.Minute))
	require.NoError(t, err, "the long holder's entry survived the short one's expiry")
	_, err = sem.AcquireUntil(ctx, "s", time.Now().Add(time.Minute))
	require.Equal(t, apperr.RateLimited, apperr.CodeOf(err), "the long holder still holds its slot")
}
