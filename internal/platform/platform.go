// Package platform builds the domain services a process needs, once, from
// its configuration and connections. The api, console and worker front doors
// take a *Platform; cmd/appruntime and the tests build it the same way.
package platform

import (
	"context"
	"log/slog"

	"github.com/redis/go-redis/v9"

	"github.com/appruntime/appruntime/internal/config"
	"github.com/appruntime/appruntime/internal/store"
	"github.com/appruntime/appruntime/jobs"
)

// Options are the connections and settings every service is built from.
type Options struct {
	Config *config.Config
	Log    *slog.Logger
	Store  *store.Store
	Redis  *redis.Client
	// KeyPrefix starts every Redis key and pub/sub channel ("appruntime:" in
	// production; tests give each test its own).
	KeyPrefix string
	Queues    jobs.Queues
}

// Platform is the set of domain services of one process.
type Platform struct {
	Options

	closers []func()
}

// New builds every service. Services with background work (cache
// invalidation subscribers, pools) stop when Close is called.
func New(ctx context.Context, o Options) (*Platform, error) {
	p := &Platform{Options: o}
	return p, nil
}

// onClose registers fn to run at Close, in reverse order of registration.
func (p *Platform) onClose(fn func()) { p.closers = append(p.closers, fn) }

// Close stops the services' background work and releases their pools.
func (p *Platform) Close() {
	for i := len(p.closers) - 1; i >= 0; i-- {
		p.closers[i]()
	}
	p.closers = nil
}
