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

// Open connects to the Redis REDIS_URL names (one server, a master found
// through Sentinels, or a Cluster through its seeds:
// docs/operators.md#redis-sentinel-and-cluster) and checks that it answers;
// errors name REDIS_URL. Every command's availability error (the server
// gone, a failover under way) comes back as a retryable apperr.Unavailable.
// The client is a *redis.Client for one server or Sentinel and a
// *redis.ClusterClient for a Cluster (IsCluster).
func Open(ctx context.Context, url string) (redis.UniversalClient, error) {
	target, err := config.ParseRedisURL(url)
	if err != nil {
		return nil, &config.Error{Var: "REDIS_URL", Reason: err.Error()}
	}
	var client redis.UniversalClient
	if f := target.Failover; f != nil {
		f.PoolSize = 64
		if f.Protocol == 0 {
			f.Protocol = 2
		}
		client = redis.NewFailoverClient(f)
	} else if c := target.Cluster; c != nil {
		// PoolSize is per node here.
		c.PoolSize = 64
		if c.Protocol == 0 {
			c.Protocol = 2
		}
		// go-redis learns a new slot map from a MOVED reply or every
		// ClusterStateReloadInterval (60 s by default); a master that died
		// answers nothing, so after its replica took over the client would
		// dial the dead address for up to a minute. The hook below asks for
		// a reload on every such failure; the interval bounds the rest.
		c.ClusterStateReloadInterval = clusterReloadInterval
		cc := redis.NewClusterClient(c)
		cc.AddHook(availabilityHook{unavailable: func() { cc.ReloadState(context.Background()) }})
		client = cc
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
	if !IsCluster(client) {
		client.AddHook(availabilityHook{})
	}
	pingCtx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	if err := client.Ping(pingCtx).Err(); err != nil {
		_ = client.Close()
		return nil, &config.Error{Var: "REDIS_URL", Reason: fmt.Sprintf("cannot reach Redis (%s): %v", target.Describe(), err)}
	}
	return client, nil
}

// clusterReloadInterval is how stale a Cluster client's slot map may get
// without a failure telling it to reload: one CLUSTER SLOTS per interval.
const clusterReloadInterval = 5 * time.Second

// IsCluster reports whether client talks to a Redis Cluster, where a
// plain PUBLISH's subscriber count is one node's only (Broadcast uses
// sharded pub/sub there).
func IsCluster(client redis.UniversalClient) bool {
	_, ok := client.(*redis.ClusterClient)
	return ok
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
