package rdb_test

import (
	"context"
	"log/slog"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/appruntime/appruntime/internal/apperr"
	"github.com/appruntime/appruntime/internal/rdb"
	"github.com/appruntime/appruntime/internal/testkit"
)

func TestPublishReturnsOnlyAfterEverySubscriberApplied(t *testing.T) {
	t.Parallel()
	rd := testkit.Redis(t)
	log := slog.New(slog.DiscardHandler)
	const replicas = 3
	var mu sync.Mutex
	seen := make([][]string, replicas)
	resyncs := atomic.Int32{}
	for i := range replicas {
		b := rdb.NewBroadcast(rd.Client, rd.Prefix, "test", log)
		err := b.Listen(func(p string) {
			time.Sleep(20 * time.Millisecond) // a slow subscriber still holds the publisher
			mu.Lock()
			seen[i] = append(seen[i], p)
			mu.Unlock()
		}, func(context.Context) error { resyncs.Add(1); return nil }, 5*time.Second)
		require.NoError(t, err)
		t.Cleanup(b.Close)
	}
	require.Equal(t, int32(replicas), resyncs.Load(), "each subscription resyncs once it is live")

	pub := rdb.NewBroadcast(rd.Client, rd.Prefix, "test", log)
	require.NoError(t, pub.Publish(context.Background(), "hello world", 2*time.Second))
	mu.Lock()
	for i := range replicas {
		require.Equal(t, []string{"hello world"}, seen[i], "replica %d applied before Publish returned", i)
	}
	mu.Unlock()
	keys, err := rd.Client.Keys(context.Background(), rd.Prefix+"test:ack:*").Result()
	require.NoError(t, err)
	require.Empty(t, keys, "acknowledgement lists are removed")
}

func TestPublishDoesNotWaitForeverForAStuckSubscriber(t *testing.T) {
	t.Parallel()
	rd := testkit.Redis(t)
	log := slog.New(slog.DiscardHandler)
	release := make(chan struct{})
	b := rdb.NewBroadcast(rd.Client, rd.Prefix, "stuck", log)
	require.NoError(t, b.Listen(func(string) { <-release }, func(context.Context) error { return nil }, 5*time.Second))
	t.Cleanup(func() { close(release); b.Close() })

	start := time.Now()
	require.NoError(t, b.Publish(context.Background(), "x", 200*time.Millisecond))
	require.Less(t, time.Since(start), 2*time.Second)
	require.GreaterOrEqual(t, time.Since(start), 200*time.Millisecond)
}

func TestPublishWithoutRedisIsUnavailable(t *testing.T) {
	t.Parallel()
	client := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1", MaxRetries: -1, DialTimeout: time.Second})
	t.Cleanup(func() { _ = client.Close() })
	b := rdb.NewBroadcast(client, "x:", "test", slog.New(slog.DiscardHandler))
	err := b.Publish(context.Background(), "hello", time.Second)
	require.Equal(t, apperr.Unavailable, apperr.CodeOf(err), "%v", err)
	require.Equal(t, 503, apperr.Status(apperr.CodeOf(err)))
}
