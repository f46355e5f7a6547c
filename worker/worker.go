package worker

import (
	"context"
	"fmt"
	"log/slog"
	"sync"

	"github.com/hibiken/asynq"

	"github.com/appruntime/appruntime/internal/platform"
)

// Worker is the running fleet member.
type Worker struct {
	p       *platform.Platform
	servers []*asynq.Server
	muxes   map[string]*asynq.ServeMux // by queue name
	loops   []func(context.Context)    // background loops (the outbox relay, maintenance)
}

// New builds a worker with every handler registered.
func New(p *platform.Platform) *Worker {
	w := &Worker{p: p, muxes: map[string]*asynq.ServeMux{}}
	for _, q := range []string{p.Queues.Lookup, p.Queues.Extract, p.Queues.Script, p.Queues.Events} {
		w.muxes[q] = asynq.NewServeMux()
	}
	w.register()
	return w
}

// register mounts the job handlers and background loops.
func (w *Worker) register() {
	w.registerEvents()
	w.registerMaintenance()
	w.registerAgentTools()
}

// Run processes jobs until ctx is done, then stops taking new jobs and waits
// for running ones up to the configured shutdown timeout.
func (w *Worker) Run(ctx context.Context) error {
	logger := &asynqLogger{log: w.p.Log}
	for q, mux := range w.muxes {
		srv := asynq.NewServerFromRedisClient(w.p.Redis, asynq.Config{
			Concurrency:     w.p.Config.WorkerConcurrency,
			Queues:          map[string]int{q: 1},
			ShutdownTimeout: w.p.Config.ShutdownTimeout,
			RetryDelayFunc:  retryDelay,
			Logger:          logger,
			LogLevel:        asynq.WarnLevel,
			ErrorHandler: asynq.ErrorHandlerFunc(func(ctx context.Context, t *asynq.Task, err error) {
				id, _ := asynq.GetTaskID(ctx)
				w.p.Log.WarnContext(ctx, "job failed", "kind", t.Type(), "task_id", id, "error", err.Error())
			}),
		})
		if err := srv.Start(mux); err != nil {
			w.shutdown()
			return fmt.Errorf("worker: start %s server: %w", q, err)
		}
		w.servers = append(w.servers, srv)
	}
	loopCtx, stopLoops := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	for _, loop := range w.loops {
		wg.Add(1)
		go func() { defer wg.Done(); loop(loopCtx) }()
	}
	w.p.Log.Info("worker started", "queues", len(w.servers))
	<-ctx.Done()
	// Stop taking jobs everywhere first, then wait for running ones.
	for _, srv := range w.servers {
		srv.Stop()
	}
	stopLoops()
	w.shutdown()
	wg.Wait()
	w.p.Log.Info("worker stopped")
	return nil
}

func (w *Worker) shutdown() {
	var wg sync.WaitGroup
	for _, srv := range w.servers {
		wg.Add(1)
		go func() { defer wg.Done(); srv.Shutdown() }()
	}
	wg.Wait()
}

// asynqLogger routes asynq's own logs to slog.
type asynqLogger struct{ log *slog.Logger }

func (l *asynqLogger) Debug(args ...any) { l.log.Debug(fmt.Sprint(args...), "component", "asynq") }
func (l *asynqLogger) Info(args ...any)  { l.log.Info(fmt.Sprint(args...), "component", "asynq") }
func (l *asynqLogger) Warn(args ...any)  { l.log.Warn(fmt.Sprint(args...), "component", "asynq") }
func (l *asynqLogger) Error(args ...any) { l.log.Error(fmt.Sprint(args...), "component", "asynq") }
func (l *asynqLogger) Fatal(args ...any) {
	l.log.Error(fmt.Sprint(args...), "component", "asynq", "fatal", true)
}
