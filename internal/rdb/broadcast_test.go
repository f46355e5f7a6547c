package rdb_test

import (
	"context"
	"fmt"
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

// TestPublishReturnsOnlyAfterEverySubscriberApplied runs on one Redis and
// on a three-master Cluster, where each replica has a client of its own
// (its connections land on whichever node): a plain PUBLISH there counts
// only the subscribers of the node that took it, so Publish returned
// before the others had applied.
func TestPublishReturnsOnlyAfterEverySubscriberApplied(t *testing.T) {
	t.Parallel()
	for _, mode := range redisModes {
		t.Run(mode.name, func(t *testing.T) {
			t.Parallel()
			rd := mode.env(t)
			log := slog.New(slog.DiscardHandler)
			const replicas = 3
			var mu sync.Mutex
			seen := make([][]string, replicas)
			resyncs := atomic.Int32{}
			for i := range replicas {
				b := rdb.NewBroadcast(mode.client(t, rd), rd.Prefix, "test", log)
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

			// One publisher, several messages: its commands spread over the
			// nodes.
			pub := rdb.NewBroadcast(mode.client(t, rd), rd.Prefix, "test", log)
			for round := range 6 {
				payload := fmt.Sprintf("hello %d", round)
				require.NoError(t, pub.Publish(context.Background(), payload, 2*time.Second))
				mu.Lock()
				last := make([]string, replicas)
				for i := range replicas {
					if n := len(seen[i]); n > 0 {
						last[i] = seen[i][n-1]
					}
				}
				mu.Unlock()
				for i := range replicas {
					require.Equal(t, payload, last[i], "replica %d applied before Publish returned", i)
				}
			}
			require.Empty(t, keysMatching(t, rd.Client, rd.Prefix+"test:ack:*"), "acknowledgement lists are removed")
		})
	}
}

// redisModes are the deployments a test of a Redis user runs on: the
// shared test Redis, and the shared three-master Cluster.
var redisModes = []struct {
	name string
	env  func(testing.TB) testkit.RedisEnv
	// client is another replica's client on the same deployment.
	client func(testing.TB, testkit.RedisEnv) redis.UniversalClient
}{
	{"redis", testkit.Redis, func(_ testing.TB, rd testkit.RedisEnv) redis.UniversalClient { return rd.Client }},
	{"cluster", testkit.ClusterRedis, func(t testing.TB, _ testkit.RedisEnv) redis.UniversalClient {
		return testkit.SharedCluster(t).Client(t)
	}},
}

// keysMatching lists the keys matching pattern, on every master of a
// Cluster.
func keysMatching(t testing.TB, client redis.UniversalClient, pattern string) []string {
	t.Helper()
	ctx := context.Background()
	cc, ok := client.(*redis.ClusterClient)
	if !ok {
		keys, err := client.Keys(ctx, pattern).Result()
		require.NoError(t, err)
		return keys
	}
	var mu sync.Mutex
	var all []string
	require.NoError(t, cc.ForEachMaster(ctx, func(ctx context.Context, node *redis.Client) error {
		keys, err := node.Keys(ctx, pattern).Result()
		mu.Lock()
		all = append(all, keys...)
		mu.Unlock()
		return err
	}))
	return all
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
