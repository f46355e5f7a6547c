package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"strings"

	"github.com/gofiber/fiber/v2"

	"github.com/appruntime/appruntime/api"
	"github.com/appruntime/appruntime/console"
	"github.com/appruntime/appruntime/internal/binding"
	"github.com/appruntime/appruntime/internal/config"
	"github.com/appruntime/appruntime/internal/intent"
	"github.com/appruntime/appruntime/internal/metrics"
	"github.com/appruntime/appruntime/internal/platform"
	"github.com/appruntime/appruntime/internal/store"
	"github.com/appruntime/appruntime/internal/web"
	"github.com/appruntime/appruntime/worker"
)

func runAPI(ctx context.Context) error {
	return withPlatform(ctx, config.RoleAPI, func(p *platform.Platform) error {
		startDebug(p.Log, p.Config.DebugAddr)
		// Record, once at start, the writes an api that crashed left
		// unrecorded (the worker repeats it periodically).
		go intent.SweepAndLog(ctx, p.Store, p.Log)
		return serveApp(ctx, p, "api", p.Config.APIAddr, api.New(p.APIServices()))
	})
}

func runConsole(ctx context.Context) error {
	return withPlatform(ctx, config.RoleConsole, func(p *platform.Platform) error {
		app, err := console.New(p.ConsoleServices())
		if err != nil {
			return err
		}
		return serveApp(ctx, p, "console", p.Config.ConsoleAddr, app)
	})
}

// runWorker runs the worker; --queues (or WORKER_QUEUES) names the queue
// classes it serves, all when unset.
func runWorker(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("worker", flag.ContinueOnError)
	queueList := fs.String("queues", "", "comma-separated queue classes to serve: "+strings.Join(config.QueueClasses, ","))
	if err := fs.Parse(args); err != nil {
		return errUsage
	}
	var only []string
	if *queueList != "" {
		qs, err := config.ParseQueueList(*queueList)
		if err != nil {
			return fmt.Errorf("--queues: %w", err)
		}
		only = qs
	}
	return withPlatform(ctx, config.RoleWorker, func(p *platform.Platform) error {
		startDebug(p.Log, p.Config.DebugAddr)
		setWorkerMemoryLimit(p.Log, p.Config)
		if only != nil {
			p.Config.WorkerQueues = only
		}
		return worker.New(p.WorkerServices()).Run(ctx)
	})
}

// withPlatform reads the configuration of role, opens the platform, serves
// its metrics on METRICS_ADDR (when set), runs fn with it and closes it.
func withPlatform(ctx context.Context, role config.Role, fn func(*platform.Platform) error) error {
	cfg, err := loadConfig(role)
	if err != nil {
		return err
	}
	log := newLogger(cfg)
	stopTracing, err := startTracing(ctx, cfg, role, log)
	if err != nil {
		return err
	}
	defer stopTracing()
	p, closePlatform, err := openPlatform(ctx, cfg, log)
	if err != nil {
		return err
	}
	defer closePlatform()
	stopMetrics, err := startMetrics(ctx, p)
	if err != nil {
		return err
	}
	return errors.Join(fn(p), stopMetrics())
}

// startMetrics serves p's metrics at /metrics on METRICS_ADDR until stop is
// called; with no METRICS_ADDR it does nothing. A port already taken fails
// the start, as the API's own would.
func startMetrics(ctx context.Context, p *platform.Platform) (stop func() error, err error) {
	if p.Config.MetricsAddr == "" {
		return func() error { return nil }, nil
	}
	ln, err := web.Listen(p.Config.MetricsAddr)
	if err != nil {
		return nil, fmt.Errorf("metrics: %w", err)
	}
	p.Log.Info("metrics listening", "addr", ln.Addr().String(), "path", metrics.Path)
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- metrics.Serve(ctx, ln, p.Metrics.Handler(), p.Config.ShutdownTimeout) }()
	return func() error { cancel(); return <-done }, nil
}

func runMigrate(ctx context.Context) error {
	cfg, err := loadConfig(config.RoleMigrate)
	if err != nil {
		return err
	}
	st, err := store.Open(ctx, cfg.DatabaseURL, store.Options{})
	if err != nil {
		return err
	}
	defer st.Close()
	applied, err := st.Migrate(ctx)
	if err != nil {
		return err
	}
	v, err := st.SchemaVersion(ctx)
	if err != nil {
		return err
	}
	fmt.Printf("migrate: applied %d migration(s) %v; schema version %d\n", len(applied), applied, v)
	return reportUnscopedWrites(ctx, st)
}

// reportUnscopedWrites prints every saved binding's write op that breaks the
// fixed-values rule (saved before it existed). The migration has succeeded:
// such ops answer 403 until an admin fixes their binding, so they are listed
// for the operator rather than failing the release.
func reportUnscopedWrites(ctx context.Context, st *store.Store) error {
	bad, err := binding.FindUnscopedWrites(ctx, st.DB)
	if err != nil {
		return err
	}
	if len(bad) > 0 {
		fmt.Printf("migrate: %d write op(s) of saved bindings are refused (403) until an admin fixes them:\n", len(bad))
	}
	for _, b := range bad {
		fmt.Printf("  workspace %s, binding %s %q: %s\n", b.WorkspaceID, b.BindingID, b.BindingName, b.Unscoped)
	}
	return nil
}

// serveApp listens on addr and serves app until ctx is done, then drains.
func serveApp(ctx context.Context, p *platform.Platform, name, addr string, app *fiber.App) error {
	ln, err := web.Listen(addr)
	if err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	p.Log.Info(name+" listening", "addr", ln.Addr().String())
	err = web.Serve(ctx, app, ln, p.Config.ShutdownTimeout)
	p.Log.Info(name + " stopped")
	return ignoreClosed(err)
}
