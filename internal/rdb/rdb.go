// Package rdb opens appruntime's Redis connection: asynq queues, rate limits,
// semaphores and the acknowledged broadcasts (Broadcast) all share it. In the embedded
// dev mode it can start an in-process Redis instead.
package rdb

import (
	"context"
	"fmt"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"

	"github.com/appruntime/appruntime/internal/config"
)

// Open connects to the Redis REDIS_URL names (one server, or a master
// found through Sentinels: docs/operators.md#redis-sentinel-and-cluster) and
// checks that it answers; errors name REDIS_URL. Every command's
// availability error (the server gone, a failover under way) comes back as
// a retryable apperr.Unavailable.
func Open(ctx context.Context, url string) (*redis.Client, error) {
	target, err := config.ParseRedisURL(url)
	if err != nil {
		return nil, &config.Error{Var: "REDIS_URL", Reason: err.Error()}
	}
	var client *redis.Client
	if f := target.Failover; f != nil {
		f.PoolSize = 64
		if f.Protocol == 0 {
			f.Protocol = 2
		}
		client = redis.NewFailoverClient(f)
	} else {
		opts := target.Simple
		opts.PoolSize = 64
		// RESP2 unless the URL asks (?protocol=3): appruntime uses no RESP3
		// feature (client-side caching, push notifications), and under RESP3
		// go-redis looks for pending push frames around every command, about 6%
		// of a worker's CPU per /run job.
		if opts.Protocol == 0 {
			opts.Protocol = 2
		}
		client = redis.NewClient(opts)
	}
	client.AddHook(availabilityHook{})
	pingCtx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	if err := client.Ping(pingCtx).Err(); err != nil {
		_ = client.Close()
		return nil, &config.Error{Var: "REDIS_URL", Reason: fmt.Sprintf("cannot reach Redis (%s): %v", target.Describe(), err)}
	}
	return client, nil
}

// Embedded is an in-process Redis for the dev mode.
type Embedded struct {
	server *miniredis.Miniredis
	URL    string
}

// StartEmbedded starts an in-process Redis on a loopback port.
func StartEmbedded() (*Embedded, error) {
	m := miniredis.NewMiniRedis()
	if err := m.Start(); err != nil {
		return nil, fmt.Errorf("rdb: start embedded redis: %w", err)
	}
	return &Embedded{server: m, URL: "redis://" + m.Addr() + "/0"}, nil
}

// Close stops the embedded server.
func (e *Embedded) Close() { e.server.Close() }
