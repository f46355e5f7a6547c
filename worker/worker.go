package worker

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"time"

	"github.com/hibiken/asynq"
	"github.com/redis/go-redis/v9"

	"github.com/appruntime/appruntime/internal/agentcall"
	"github.com/appruntime/appruntime/internal/capability"
	"github.com/appruntime/appruntime/internal/claim"
	"github.com/appruntime/appruntime/internal/logging"
	"github.com/appruntime/appruntime/internal/metrics"
	"github.com/appruntime/appruntime/internal/notify"
	"github.com/appruntime/appruntime/internal/outbox"
	"github.com/appruntime/appruntime/internal/requestid"
	"github.com/appruntime/appruntime/internal/review"
	"github.com/appruntime/appruntime/internal/task"
	"github.com/appruntime/appruntime/internal/toolrun"
	"github.com/appruntime/appruntime/internal/tracing"
	"github.com/appruntime/appruntime/jobs"
)

// Services are what the worker may touch: the services its job handlers
// and background loops call, its logger, Redis (the queues) and its
// settings. internal/platform builds them (Platform.WorkerServices).
type Services struct {
	Log *slog.Logger
	// Redis carries the queues.
	Redis  redis.UniversalClient
	Queues jobs.Queues
	// Concurrency is how many jobs each queue's server runs at once
	// (Config.WorkerConcurrency) unless QueueConcurrency names its class.
	Concurrency int
	// QueueConcurrency is the concurrency per queue class
	// (Config.QueueConcurrency).
	QueueConcurrency map[string]int
	// QueueServers is how many asynq servers share a queue class's
	// concurrency (Config.QueueServers; 1 when unnamed).
	QueueServers map[string]int
	// WorkerQueues are the queue classes served; empty serves all
	// (Config.WorkerQueues, `appruntime worker --queues`).
	WorkerQueues []string
	// TaskCheckInterval is how often an idle server looks for a job
	// (Config.TaskCheckInterval): a /run's pickup latency.
	TaskCheckInterval time.Duration
	// ShutdownTimeout is how long running jobs may finish at shutdown.
	ShutdownTimeout time.Duration
	// OutboxRetention is how long sent outbox rows are kept
	// (Config.OutboxRetention).
	OutboxRetention time.Duration
	// SweepInterval is how often owed jobs Redis lost are re-created
	// (Config.SweepInterval).
	SweepInterval time.Duration

	// SweepIntents records abandoned write intents as outcome unknown
	// (intent.SweepAndLog over the platform's store).
	SweepIntents func(context.Context)
	// Relay moves committed outbox rows to the events queue and prunes
	// sent ones.
	Relay *outbox.Relay
	// Resumes carries out resume events and webhook deliveries.
	Resumes *review.Resumer
	// KeyPrefix names the Redis keys job waiters listen on (jobwait).
	KeyPrefix string
	// ToolRuns runs /run's jobs (the lookup, extract and script queues).
	ToolRuns *toolrun.Runner
	// Documents runs uploads' OCR passes (the extract queue's ocr_file
	// jobs); nil leaves them to the sweep of a worker that has it.
	Documents *capability.Service
	// Seed writes a producer's rows through its step's binding
	// (toolrun.StepSeeder); nil fails every producer.
	Seed toolrun.Seeder
	// AgentCalls executes agent tool calls (the lookup queue).
	AgentCalls *agentcall.Service
	// Tasks runs the summary pass.
	Tasks *task.Service
	// Parked releases awaits whose await_expiry_seconds ran out.
	Parked *review.Parked
	// Queue clears review claims whose time ran out.
	Queue *claim.Queue
	// Notify tells and escalates review pools' waiting work (the notify
	// pass, every NotifyInterval); nil runs no pass.
	Notify *notify.Notifier
	// NotifyInterval is how often the notify pass runs
	// (Config.NotifyInterval).
	NotifyInterval time.Duration
	// Metrics records every job's duration and outcome; nil records nothing.
	Metrics *metrics.Metrics
}

// Worker is the running fleet member.
type Worker struct {
	Services
	servers []*asynq.Server
	muxes   map[string]*asynq.ServeMux // by queue name
	classes map[string]string          // queue name → class (config.QueueClasses)
	loops   []func(context.Context)    // background loops (the outbox relay, maintenance)
}

// New builds a worker with every handler registered.
func New(svc Services) *Worker {
	w := &Worker{Services: svc, muxes: map[string]*asynq.ServeMux{}, classes: map[string]string{
		svc.Queues.Lookup: "lookup", svc.Queues.Extract: "extract", svc.Queues.Script: "script", svc.Queues.Events: "events",
	}}
	for q := range w.classes {
		mux := asynq.NewServeMux()
		// Every job's duration and outcome is recorded by kind.
		mux.Use(svc.Metrics.JobMiddleware, jobLogging)
		w.muxes[q] = mux
	}
	w.register()
	return w
}

// register mounts the job handlers and background loops.
func (w *Worker) register() {
	w.registerEvents()
	w.registerMaintenance()
	w.registerAgentTools()
	w.registerRuns()
}

// Run processes jobs until ctx is done, then stops taking new jobs and waits
// for running ones up to the configured shutdown timeout.
func (w *Worker) Run(ctx context.Context) error {
	logger := &asynqLogger{log: w.Log}
	for q, mux := range w.muxes {
		class := w.classes[q]
		if len(w.WorkerQueues) > 0 && !slices.Contains(w.WorkerQueues, class) {
			continue
		}
		concurrency := w.QueueConcurrency[class]
		if concurrency == 0 {
			concurrency = w.Concurrency
		}
		// An asynq server dequeues one job per Redis round trip, one after
		// another: several servers share a busy class's concurrency so its
		// pickups do not queue behind each other.
		for _, share := range splitConcurrency(concurrency, w.QueueServers[class]) {
			srv := asynq.NewServerFromRedisClient(w.Redis, asynq.Config{
				Concurrency:       share,
				TaskCheckInterval: w.TaskCheckInterval,
				Queues:            map[string]int{q: 1},
				ShutdownTimeout:   w.ShutdownTimeout,
				RetryDelayFunc:    retryDelay,
				IsFailure:         isFailure,
				Logger:            logger,
				LogLevel:          asynq.WarnLevel,
				ErrorHandler: asynq.ErrorHandlerFunc(func(ctx context.Context, t *asynq.Task, err error) {
					if !isFailure(err) {
						return
					}
					w.Log.WarnContext(jobContext(ctx, t), "job failed", "error", err.Error())
				}),
			})
			if err := srv.Start(mux); err != nil {
				w.shutdown()
				return fmt.Errorf("worker: start %s server: %w", q, err)
			}
			w.servers = append(w.servers, srv)
		}
	}
	loopCtx, stopLoops := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	for _, loop := range w.loops {
		wg.Add(1)
		go func() { defer wg.Done(); loop(loopCtx) }()
	}
	w.Log.Info("worker started", "servers", len(w.servers))
	<-ctx.Done()
	// Stop taking jobs everywhere first, then wait for running ones.
	for _, srv := range w.servers {
		srv.Stop()
	}
	stopLoops()
	w.shutdown()
	wg.Wait()
	w.Log.Info("worker stopped")
	return nil
}

// splitConcurrency shares concurrency among at most servers servers (at
// least one), each running at least one job: 10 among 4 is 3, 3, 2, 2.
func splitConcurrency(concurrency, servers int) []int {
	n := max(1, min(servers, concurrency))
	shares := make([]int, n)
	for i := range shares {
		shares[i] = concurrency / n
		if i < concurrency%n {
			shares[i]++
		}
	}
	return shares
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

// jobContext is ctx carrying job t's kind, its id and the id of the request
// that caused it (a task header, requestid.FromTask), so that every line
// logged with it names the job and joins the request's lines.
func jobContext(ctx context.Context, t *asynq.Task) context.Context {
	ctx = requestid.FromTask(ctx, t)
	attrs := []slog.Attr{slog.String("kind", t.Type())}
	if id, ok := asynq.GetTaskID(ctx); ok {
		attrs = append(attrs, slog.String("job_id", id))
	}
	return logging.With(ctx, attrs...)
}

// jobLogging is the asynq middleware of every queue: handlers run with
// jobContext (and, with tracing on, in a span of the trace the task carries),
// and the tasks they enqueue through requestid.NewTask pass the request id
// and the trace on.
func jobLogging(next asynq.Handler) asynq.Handler {
	return asynq.HandlerFunc(func(ctx context.Context, t *asynq.Task) error {
		ctx = jobContext(ctx, t)
		if !tracing.Enabled() {
			return next.ProcessTask(ctx, t)
		}
		// The job's span continues the trace its task header carries.
		id, _ := asynq.GetTaskID(ctx)
		ctx, span := tracing.StartJob(ctx, t.Type(), id, t.Headers()[tracing.TaskHeader])
		err := next.ProcessTask(ctx, t)
		tracing.End(span, err)
		return err
	})
}
