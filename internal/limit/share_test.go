package limit_test

import (
	"context"
	"errors"
	"net"
	"strconv"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/appruntime/appruntime/internal/apperr"
	"github.com/appruntime/appruntime/internal/limit"
	"github.com/appruntime/appruntime/internal/rdb"
	"github.com/appruntime/appruntime/internal/testkit"
)

// shareRedis runs a test against the test Redis and against the dev mode's
// in-process one.
func shareRedis(t *testing.T, run func(t *testing.T, rc redis.UniversalClient, prefix string)) {
	t.Run("redis", func(t *testing.T) {
		t.Parallel()
		env := testkit.Redis(t)
		run(t, env.Client, env.Prefix)
	})
	t.Run("embedded", func(t *testing.T) {
		t.Parallel()
		emb, err := rdb.StartEmbedded()
		require.NoError(t, err)
		t.Cleanup(emb.Close)
		rc, err := rdb.Open(context.Background(), emb.URL)
		require.NoError(t, err)
		t.Cleanup(func() { _ = rc.Close() })
		run(t, rc, "dev:")
	})
}

func TestShareBoundsOneWorkspaceNotAnother(t *testing.T) {
	t.Parallel()
	shareRedis(t, func(t *testing.T, rc redis.UniversalClient, prefix string) {
		share := limit.NewShare(rc, prefix, map[string]int{"script": 2, "events": 0}, 50*time.Millisecond)
		ctx := context.Background()
		deadline := time.Now().Add(time.Minute)
		require.Equal(t, 2, share.Slots("script"))
		require.Zero(t, share.Slots("events"))

		require.NoError(t, share.Acquire(ctx, "script", "ws-a", "job-1", deadline))
		require.NoError(t, share.Acquire(ctx, "script", "ws-a", "job-2", deadline))
		start := time.Now()
		err := share.Acquire(ctx, "script", "ws-a", "job-3", deadline)
		require.GreaterOrEqual(t, time.Since(start), 50*time.Millisecond, "the enqueue waited for a slot first")
		require.Equal(t, apperr.RateLimited, apperr.CodeOf(err))
		require.ErrorIs(t, err, limit.ErrSlotsTaken)
		secs := apperr.RetryAfterSeconds(err)
		require.True(t, secs >= 1 && secs <= 5, "Retry-After %d", secs)
		_, _, msg := apperr.Public(err)
		require.Equal(t, "this workspace already has 2 jobs on the script queue, its share of the workers; retry later", msg)

		require.NoError(t, share.Acquire(ctx, "script", "ws-b", "job-4", deadline), "another workspace has a share of its own")
		require.NoError(t, share.Acquire(ctx, "events", "ws-a", "job-5", deadline), "a queue without a share admits")

		// A slot released while the next enqueue waits admits it.
		go func() {
			time.Sleep(20 * time.Millisecond)
			limit.ReleaseShare(ctx, rc, prefix, "script", "ws-a", "job-1")
		}()
		require.NoError(t, share.Acquire(ctx, "script", "ws-a", "job-3", deadline))
		limit.ReleaseShare(ctx, rc, prefix, "script", "ws-a", "job-1") // twice: frees nothing else
		require.Error(t, share.Acquire(ctx, "script", "ws-a", "job-6", deadline))
	})
}

func TestShareSlotFreesAtTheJobsDeadline(t *testing.T) {
	t.Parallel()
	shareRedis(t, func(t *testing.T, rc redis.UniversalClient, prefix string) {
		share := limit.NewShare(rc, prefix, map[string]int{"lookup": 1}, 0)
		ctx := context.Background()
		// Its worker died: nobody releases it.
		require.NoError(t, share.Acquire(ctx, "lookup", "ws-a", "job-1", time.Now().Add(200*time.Millisecond)))
		require.Equal(t, apperr.RateLimited, apperr.CodeOf(share.Acquire(ctx, "lookup", "ws-a", "job-2", time.Now().Add(time.Minute))))
		time.Sleep(250 * time.Millisecond)
		require.NoError(t, share.Acquire(ctx, "lookup", "ws-a", "job-2", time.Now().Add(time.Minute)))
	})
}

func TestShareWaitingCallerWaitsUntilItsContextEnds(t *testing.T) {
	t.Parallel()
	env := testkit.Redis(t)
	share := limit.NewShare(env.Client, env.Prefix, map[string]int{"lookup": 1}, 0)
	ctx := context.Background()
	deadline := time.Now().Add(time.Minute)
	require.NoError(t, share.Acquire(ctx, "lookup", "ws-a", "job-1", deadline))
	go func() {
		time.Sleep(150 * time.Millisecond)
		limit.ReleaseShare(ctx, env.Client, env.Prefix, "lookup", "ws-a", "job-1")
	}()
	require.NoError(t, share.AcquireWaiting(ctx, "lookup", "ws-a", "job-2", deadline), "an agent's call waits rather than fails")

	short, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
	defer cancel()
	err := share.AcquireWaiting(short, "lookup", "ws-a", "job-3", deadline)
	require.Error(t, err)
	require.NotEqual(t, apperr.Internal, apperr.CodeOf(err))
}

func TestShareWithoutRedisIsUnavailable(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := ln.Addr().String()
	require.NoError(t, ln.Close()) // nothing listens there now
	rc := redis.NewClient(&redis.Options{Addr: addr, MaxRetries: -1})
	t.Cleanup(func() { _ = rc.Close() })
	share := limit.NewShare(rc, "x:", map[string]int{"script": 1}, time.Second)
	err = share.Acquire(context.Background(), "script", "ws-a", "job-1", time.Now().Add(time.Minute))
	require.Equal(t, apperr.Unavailable, apperr.CodeOf(err))
	require.False(t, errors.Is(err, limit.ErrSlotsTaken))
}

// BenchmarkShareAcquireRelease is the cost a job pays for its share: one
// script to take a slot when enqueued, one ZREM when it ends.
func BenchmarkShareAcquireRelease(b *testing.B) {
	env := testkit.Redis(b)
	share := limit.NewShare(env.Client, env.Prefix, map[string]int{"script": 5}, time.Second)
	ctx := context.Background()
	deadline := time.Now().Add(time.Hour)
	b.ResetTimer()
	for i := range b.N {
		id := strconv.Itoa(i)
		if err := share.Acquire(ctx, "script", "ws-a", id, deadline); err != nil {
			b.Fatal(err)
		}
		limit.ReleaseShare(ctx, env.Client, env.Prefix, "script", "ws-a", id)
	}
}
