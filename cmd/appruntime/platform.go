package main

import (
	"context"
	"errors"
	"log/slog"
	"os"
	"strings"

	"github.com/appruntime/appruntime/internal/config"
	"github.com/appruntime/appruntime/internal/logging"
	"github.com/appruntime/appruntime/internal/platform"
	"github.com/appruntime/appruntime/internal/rdb"
	"github.com/appruntime/appruntime/internal/store"
	"github.com/appruntime/appruntime/jobs"
)

// openPlatform connects to Redis and the database (checking it is migrated)
// and builds the domain services. close releases everything.
func openPlatform(ctx context.Context, cfg *config.Config, log *slog.Logger) (p *platform.Platform, close func(), err error) {
	rc, err := rdb.Open(ctx, cfg.RedisURL)
	if err != nil {
		return nil, nil, err
	}
	st, err := store.Open(ctx, cfg.DatabaseURL, store.Options{})
	if err != nil {
		_ = rc.Close()
		return nil, nil, err
	}
	if err := st.CheckMigrated(ctx); err != nil {
		_ = st.Close()
		_ = rc.Close()
		return nil, nil, err
	}
	p, err = platform.New(ctx, platform.Options{
		Config: cfg, Log: log, Store: st, Redis: rc, KeyPrefix: cfg.RedisKeyPrefix, Queues: queues(cfg.RedisKeyPrefix),
	})
	if err != nil {
		_ = st.Close()
		_ = rc.Close()
		return nil, nil, err
	}
	return p, func() {
		p.Close()
		_ = rc.Close()
		_ = st.Close()
	}, nil
}

// loadConfig reads the environment for role.
func loadConfig(role config.Role) (*config.Config, error) {
	return config.Load(role, os.Getenv)
}

func newLogger(cfg *config.Config) *slog.Logger { return logging.New(os.Stderr, cfg.LogLevel) }

// ignoreClosed treats a clean stop as success.
func ignoreClosed(err error) error {
	if errors.Is(err, context.Canceled) {
		return nil
	}
	return err
}

// queues are the queue names under prefix: the plain ones under the default
// prefix, prefixed ones under any other (REDIS_KEY_PREFIX).
func queues(prefix string) jobs.Queues {
	if prefix == config.DefaultRedisKeyPrefix {
		return jobs.DefaultQueues()
	}
	return jobs.PrefixedQueues(strings.ReplaceAll(prefix, ":", "_"))
}
