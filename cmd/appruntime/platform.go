package main

import (
	"context"
	"errors"
	"log/slog"
	"os"

	"github.com/redis/go-redis/v9"

	"github.com/appruntime/appruntime/api"
	"github.com/appruntime/appruntime/console"
	"github.com/appruntime/appruntime/internal/config"
	"github.com/appruntime/appruntime/internal/logging"
	"github.com/appruntime/appruntime/internal/rdb"
	"github.com/appruntime/appruntime/internal/store"
	"github.com/appruntime/appruntime/jobs"
	"github.com/appruntime/appruntime/worker"
)

// platform is the shared state of a process: configuration, logger, the
// platform database and Redis. Every command builds one and closes it.
type platform struct {
	cfg    *config.Config
	log    *slog.Logger
	store  *store.Store
	redis  *redis.Client
	queues jobs.Queues
}

// openPlatform connects to the database (checking it is migrated) and Redis.
func openPlatform(ctx context.Context, cfg *config.Config) (*platform, error) {
	log := logging.New(os.Stderr, cfg.LogLevel)
	rc, err := rdb.Open(ctx, cfg.RedisURL)
	if err != nil {
		return nil, err
	}
	st, err := store.Open(ctx, cfg.DatabaseURL, store.Options{})
	if err != nil {
		_ = rc.Close()
		return nil, err
	}
	if err := st.CheckMigrated(ctx); err != nil {
		_ = st.Close()
		_ = rc.Close()
		return nil, err
	}
	return &platform{cfg: cfg, log: log, store: st, redis: rc, queues: jobs.DefaultQueues()}, nil
}

func (p *platform) close() {
	_ = p.redis.Close()
	_ = p.store.Close()
}

func (p *platform) apiDeps() api.Deps {
	return api.Deps{Config: p.cfg, Log: p.log, Store: p.store, Redis: p.redis}
}

func (p *platform) consoleDeps() console.Deps {
	return console.Deps{Config: p.cfg, Log: p.log, Store: p.store, Redis: p.redis}
}

func (p *platform) workerDeps() worker.Deps {
	return worker.Deps{Config: p.cfg, Log: p.log, Store: p.store, Redis: p.redis, Queues: p.queues}
}

// loadConfig reads the environment for role.
func loadConfig(role config.Role) (*config.Config, error) {
	return config.Load(role, os.Getenv)
}

// ignoreClosed treats a clean stop as success.
func ignoreClosed(err error) error {
	if errors.Is(err, context.Canceled) {
		return nil
	}
	return err
}
