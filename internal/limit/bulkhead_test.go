package limit_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/appruntime/appruntime/internal/apperr"
	"github.com/appruntime/appruntime/internal/limit"
)

func TestBulkheadFullAnswers503AfterTheWait(t *testing.T) {
	t.Parallel()
	const wait = 100 * time.Millisecond
	b := limit.NewBulkhead("lookups", 2, wait)
	r1, err := b.Acquire(context.Background())
	require.NoError(t, err)
	r2, err := b.Acquire(context.Background())
	require.NoError(t, err)
	require.Equal(t, 2, b.InUse())

	start := time.Now()
	_, err = b.Acquire(context.Background())
	require.GreaterOrEqual(t, time.Since(start), wait, "a full bulkhead waits before refusing")
	require.Equal(t, apperr.Unavailable, apperr.CodeOf(err))
	require.Equal(t, 1, apperr.RetryAfterSeconds(err))
	_, status, msg := apperr.Public(err)
	require.Equal(t, 503, status)
	require.Equal(t, "too many lookups in progress; retry", msg)

	r1()
	r1() // a second release must not free another holder's slot
	require.Equal(t, 1, b.InUse())
	r2()
	require.Zero(t, b.InUse())
}

func TestBulkheadWaiterGetsAFreedSlot(t *testing.T) {
	t.Parallel()
	b := limit.NewBulkhead("lookups", 1, 5*time.Second)
	release, err := b.Acquire(context.Background())
	require.NoError(t, err)
	time.AfterFunc(50*time.Millisecond, release)

	start := time.Now()
	second, err := b.Acquire(context.Background())
	require.NoError(t, err, "a slot freed within the wait admits the waiter")
	require.Less(t, time.Since(start), 2*time.Second)
	second()
}

func TestBulkheadWaitEndsWithTheContext(t *testing.T) {
	t.Parallel()
	b := limit.NewBulkhead("lookups", 1, time.Minute)
	release, err := b.Acquire(context.Background())
	require.NoError(t, err)
	defer release()
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, err = b.Acquire(ctx)
	require.Equal(t, apperr.Unavailable, apperr.CodeOf(err))
	require.ErrorIs(t, err, context.DeadlineExceeded)
	require.Less(t, time.Since(start), 10*time.Second)
}

// TestBulkheadRefusalNamesWhatItBounds: the lookup and run bulkheads of a
// process are separate, and each refusal says which one is full, so a
// caller (and an operator reading logs) knows which bound to raise.
func TestBulkheadRefusalNamesWhatItBounds(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ calls, msg string }{
		{"lookups", "too many lookups in progress; retry"},
		{"runs", "too many runs in progress; retry"},
	} {
		t.Run(tc.calls, func(t *testing.T) {
			t.Parallel()
			b := limit.NewBulkhead(tc.calls, 1, time.Millisecond)
			release, err := b.Acquire(context.Background())
			require.NoError(t, err)
			defer release()
			_, err = b.Acquire(context.Background())
			code, status, msg := apperr.Public(err)
			require.Equal(t, apperr.Unavailable, code)
			require.Equal(t, 503, status)
			require.Equal(t, tc.msg, msg)
			require.Equal(t, 1, apperr.RetryAfterSeconds(err))

			ctx, cancel := context.WithCancel(context.Background())
			cancel()
			patient := limit.NewBulkhead(tc.calls, 0, time.Minute)
			held, err := patient.Acquire(ctx)
			require.NoError(t, err, "a size below one is one slot, free at once")
			defer held()
			_, err = patient.Acquire(ctx)
			require.ErrorIs(t, err, context.Canceled)
			_, _, msg = apperr.Public(err)
			require.Equal(t, tc.msg, msg, "a wait ended by the caller names the bulkhead too")
		})
	}
}
