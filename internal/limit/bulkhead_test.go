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
	b := limit.NewBulkhead(2, wait)
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
	b := limit.NewBulkhead(1, 5*time.Second)
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
	b := limit.NewBulkhead(1, time.Minute)
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
