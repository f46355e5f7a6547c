package testkit

import (
	"context"
	"os"
	"strings"
	"sync"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/appruntime/appruntime/internal/rdb"
	"github.com/appruntime/appruntime/jobs"
)

// DefaultRedisURL is used when TEST_REDIS_URL is unset.
const DefaultRedisURL = "redis://127.0.0.1:6379/0"

// RedisURL returns the test Redis URL.
func RedisURL() string {
	if v := os.Getenv("TEST_REDIS_URL"); v != "" {
		return v
	}
	return DefaultRedisURL
}

// RedisEnv is a test's share of Redis: the shared client, a key prefix and
// queue names no other test uses.
type RedisEnv struct {
	Client redis.UniversalClient
	Prefix string
	Queues jobs.Queues
}

var (
	redisOnce   sync.Once
	redisClient redis.UniversalClient
	redisErr    error
)

// Redis returns the test's Redis environment; its keys and queues are
// deleted at cleanup.
func Redis(t testing.TB) RedisEnv {
	t.Helper()
	needServer(t, "Redis")
	redisOnce.Do(func() {
		redisClient, redisErr = rdb.Open(context.Background(), RedisURL())
	})
	if redisErr != nil {
		t.Fatalf("testkit: Redis at TEST_REDIS_URL (%s) is needed: %v (run scripts/services.sh)", RedisURL(), redisErr)
	}
	prefix := "tk:" + randomHex(6) + ":"
	env := RedisEnv{Client: redisClient, Prefix: prefix, Queues: jobs.PrefixedQueues(strings.ReplaceAll(prefix, ":", "_"))}
	t.Cleanup(func() {
		ctx := context.Background()
		qp := strings.ReplaceAll(prefix, ":", "_")
		for _, pattern := range []string{prefix + "*", "asynq:{" + qp + "*"} {
			iter := redisClient.Scan(ctx, 0, pattern, 500).Iterator()
			for iter.Next(ctx) {
				redisClient.Del(ctx, iter.Val())
			}
		}
		for _, q := range []string{env.Queues.Lookup, env.Queues.Extract, env.Queues.Script, env.Queues.Events} {
			redisClient.SRem(ctx, "asynq:queues", q)
		}
	})
	return env
}

// RedisOn is a RedisEnv on a client of the test's own (a Redis the test
// started, such as StartSentinel's): a fresh prefix and queue names, no
// cleanup, since the servers go with the test.
func RedisOn(client redis.UniversalClient) RedisEnv {
	prefix := "tk:" + randomHex(6) + ":"
	return RedisEnv{Client: client, Prefix: prefix, Queues: jobs.PrefixedQueues(strings.ReplaceAll(prefix, ":", "_"))}
}
