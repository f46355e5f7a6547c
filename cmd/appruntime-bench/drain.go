package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"math"
	"os"
	"os/exec"
	"strconv"
	"sync"
	"syscall"
	"time"

	"github.com/hibiken/asynq"
	"github.com/redis/go-redis/v9"

	"github.com/appruntime/appruntime/internal/jobwait"
	"github.com/appruntime/appruntime/jobs"
)

// The drain phase: how fast `appruntime worker` empties a queue of /run
// jobs (CSV lookups, record=false) against a raw asynq server whose
// handler does nothing, the baseline the 0.8× goal names. A second raw
// server stores and publishes a result per job, the least a /run job must
// do, so that what the worker adds beyond that shows too. Each raw server is
// a process of its own (`appruntime-bench rawdrain`) so that its CPU is
// read the way the worker's is; all three run at the same concurrency and
// task check interval. The drains alternate over rounds, whose median ratio
// is reported.

// Queues of the raw drains (the bench's Redis database is its own).
const (
	rawNoopQueue    = "bench_drain_noop"
	rawPublishQueue = "bench_drain_publish"
)

// minDrain is how long the fastest drain must last: shorter, and the
// unpause, the first pickups and the last poll weigh on the rate.
const minDrain = 2 * time.Second

// maxDrainJobs caps the jobs of one drain, whatever the sizing asks.
const maxDrainJobs = 200_000

// drainPoll is how often a drain looks whether its queue is empty.
const drainPoll = 5 * time.Millisecond

// drainSide is one server whose drains are measured.
type drainSide struct {
	name  string
	queue string
	pid   int // the process serving queue, whose CPU is read
	task  func(deadline time.Time) (*asynq.Task, error)
	runs  []drainResult
}

// drainResult is one drain.
type drainResult struct {
	jobs    int
	elapsed time.Duration
	cpu     time.Duration // the serving process's CPU time during the drain
}

func (r drainResult) rate() float64 { return float64(r.jobs) / r.elapsed.Seconds() }

// drainPhase measures the worker (process workerPid) against the raw
// drains and returns the median over the rounds of the worker's rate over
// the raw no-op drain's.
func drainPhase(ctx context.Context, o runOptions, redisURL string, rc *redis.Client, workerPid int, fx fixture) (float64, error) {
	input, _ := json.Marshal(map[string]any{"match_criteria": map[string]any{"id": "7"}, "return_columns": []string{"name"}})
	worker := &drainSide{name: "appruntime worker /run", queue: jobs.QueueLookup, pid: workerPid, task: func(deadline time.Time) (*asynq.Task, error) {
		return jobs.NewTaskWithHeaders(jobs.RunTool{
			TaskID: fx.taskID, StepID: fx.stepID, AgentID: fx.agentID, WorkspaceID: fx.workspaceID,
			ConfiguredToolID: fx.lookupToolID, BaseTool: "csv_lookup_tool", Op: "lookup", Input: input, Record: false, Actor: "bench",
		}, map[string]string{jobwait.DeadlineHeader: strconv.FormatInt(deadline.UnixNano(), 10)})
	}}
	noopTask := func(time.Time) (*asynq.Task, error) { return asynq.NewTask("bench_noop", []byte(`{}`)), nil }
	noop := &drainSide{name: "raw asynq no-op", queue: rawNoopQueue, task: noopTask}
	publish := &drainSide{name: "raw asynq + result publish", queue: rawPublishQueue, task: noopTask}
	for _, s := range []*drainSide{noop, publish} {
		args := []string{"rawdrain", "-redis", redisURL, "-queue", s.queue,
			"-concurrency", strconv.Itoa(o.workers), "-check-interval", o.checkInterval.String()}
		if s == publish {
			args = append(args, "-publish")
		}
		p := exec.CommandContext(ctx, os.Args[0], args...)
		p.Stdout, p.Stderr = os.Stderr, os.Stderr
		if err := p.Start(); err != nil {
			return 0, err
		}
		defer func() { _ = p.Process.Signal(syscall.SIGTERM); _ = p.Wait() }()
		s.pid = p.Process.Pid
	}
	sides := []*drainSide{worker, noop, publish}
	client := asynq.NewClientFromRedisClient(rc)
	defer client.Close()
	inspector := asynq.NewInspectorFromRedisClient(rc)

	// A warm-up drain of each side (its connections, the worker's CSV
	// index, the raw servers' start) also sizes the drains: the fastest
	// must last minDrain.
	fastest := 0.0
	for _, s := range sides {
		r, err := drain(ctx, client, inspector, rc, s, min(o.jobs, 2000))
		if err != nil {
			return 0, err
		}
		fastest = max(fastest, r.rate())
	}
	n := min(max(o.jobs, int(math.Ceil(fastest*minDrain.Seconds()))), maxDrainJobs)

	for round := range o.rounds {
		// Each round starts with another side, against drift.
		for i := range sides {
			s := sides[(round+i)%len(sides)]
			r, err := drain(ctx, client, inspector, rc, s, n)
			if err != nil {
				return 0, err
			}
			s.runs = append(s.runs, r)
		}
	}

	fmt.Printf("\ndrains of %d jobs per side in %d alternating rounds (%d workers and a %s task check interval each;\n"+
		"the worker shares its %d among %d asynq servers, WORKER_SERVERS_LOOKUP; each raw side is one asynq server);\n"+
		"jobs/s and CPU/job (of the serving process) are the median of the rounds\n", n, o.rounds, o.workers, o.checkInterval, o.workers, o.servers)
	fmt.Printf("%-28s %9s %9s %10s   %s\n", "server", "jobs/s", "drain", "CPU/job", "ratio to the no-op drain per round")
	var ratios []float64
	for _, s := range sides {
		rates, cpus, times, perRound := make([]float64, len(s.runs)), make([]float64, len(s.runs)), make([]float64, len(s.runs)), make([]float64, len(s.runs))
		for i, r := range s.runs {
			rates[i] = r.rate()
			cpus[i] = float64(r.cpu.Microseconds()) / float64(r.jobs)
			times[i] = r.elapsed.Seconds()
			perRound[i] = r.rate() / noop.runs[i].rate()
		}
		list := ""
		if s != noop {
			list = formatRatios(perRound)
		}
		if s == worker {
			ratios = perRound
		}
		fmt.Printf("%-28s %9.0f %8.2fs %8.1fµs   %s\n", s.name, median(rates), median(times), median(cpus), list)
	}
	ratio := median(ratios)
	fmt.Printf("worker drain against the raw asynq no-op drain: %.2f× (median of the rounds; goal ≥ 0.90×)\n", ratio)
	return ratio, nil
}

// drain enqueues n jobs of side s onto its paused queue, resumes it and
// times until the queue is empty, reading the serving process's CPU time
// at both ends.
func drain(ctx context.Context, client *asynq.Client, inspector *asynq.Inspector, rc *redis.Client, s *drainSide, n int) (drainResult, error) {
	deadline := time.Now().Add(10 * time.Minute)
	// The queue must exist before it can be paused.
	if err := enqueue(ctx, client, s, 1, deadline); err != nil {
		return drainResult{}, err
	}
	if err := waitEmpty(ctx, rc, s.queue); err != nil {
		return drainResult{}, err
	}
	before, err := inspector.GetQueueInfo(s.queue)
	if err != nil {
		return drainResult{}, err
	}
	if err := inspector.PauseQueue(s.queue); err != nil {
		return drainResult{}, err
	}
	if err := enqueue(ctx, client, s, n, deadline); err != nil {
		return drainResult{}, err
	}
	cpu0, err := cpuTime(s.pid)
	if err != nil {
		return drainResult{}, err
	}
	start := time.Now()
	if err := inspector.UnpauseQueue(s.queue); err != nil {
		return drainResult{}, err
	}
	if err := waitEmpty(ctx, rc, s.queue); err != nil {
		return drainResult{}, err
	}
	elapsed := time.Since(start)
	cpu1, err := cpuTime(s.pid)
	if err != nil {
		return drainResult{}, err
	}
	after, err := inspector.GetQueueInfo(s.queue)
	if err != nil {
		return drainResult{}, err
	}
	if failed := after.Archived - before.Archived; failed > 0 {
		return drainResult{}, fmt.Errorf("%s: %d job(s) failed", s.name, failed)
	}
	return drainResult{jobs: n, elapsed: elapsed, cpu: cpu1 - cpu0}, nil
}

// enqueue puts n jobs of side s on its queue from several connections.
func enqueue(ctx context.Context, client *asynq.Client, s *drainSide, n int, deadline time.Time) error {
	const enqueuers = 16
	var wg sync.WaitGroup
	errs := make([]error, enqueuers)
	for e := range enqueuers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := e; i < n && errs[e] == nil; i += enqueuers {
				t, err := s.task(deadline)
				if err == nil {
					_, err = client.EnqueueContext(ctx, t, asynq.Queue(s.queue), asynq.MaxRetry(0))
				}
				errs[e] = err
			}
		}()
	}
	wg.Wait()
	return errors.Join(errs...)
}

// waitEmpty waits until queue has no pending and no active job. It reads
// the two lists directly (asynq's keys): the Inspector's queue info runs
// scripts whose cost, every few milliseconds, would load the Redis both
// sides share.
func waitEmpty(ctx context.Context, rc *redis.Client, queue string) error {
	prefix := "asynq:{" + queue + "}:"
	limit := time.Now().Add(5 * time.Minute)
	for time.Now().Before(limit) {
		var pending, active *redis.IntCmd
		_, err := rc.Pipelined(ctx, func(p redis.Pipeliner) error {
			pending, active = p.LLen(ctx, prefix+"pending"), p.LLen(ctx, prefix+"active")
			return nil
		})
		if err != nil {
			return err
		}
		if pending.Val() == 0 && active.Val() == 0 {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(drainPoll):
		}
	}
	return fmt.Errorf("queue %s did not drain", queue)
}

// rawPublishScript is the least a /run job must do with its outcome: store
// it unless stored already, then publish it, in one round trip (as
// internal/jobwait does).
var rawPublishScript = redis.NewScript(`
if redis.call('SET', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2]) then
  redis.call('PUBLISH', ARGV[3], ARGV[1])
  return 1
end
return 0
`)

// runRawDrain serves one raw drain queue until SIGTERM: `appruntime-bench
// rawdrain`.
func runRawDrain(args []string) error {
	fs := flag.NewFlagSet("rawdrain", flag.ContinueOnError)
	redisURL := fs.String("redis", "", "Redis of the queue")
	queue := fs.String("queue", rawNoopQueue, "the queue to serve")
	concurrency := fs.Int("concurrency", 16, "jobs at once")
	checkInterval := fs.Duration("check-interval", 5*time.Millisecond, "asynq task check interval")
	publish := fs.Bool("publish", false, "store and publish a result per job, as a /run job must")
	if err := fs.Parse(args); err != nil {
		return err
	}
	opt, err := redis.ParseURL(*redisURL)
	if err != nil {
		return err
	}
	rc := redis.NewClient(opt)
	defer rc.Close()
	srv := asynq.NewServerFromRedisClient(rc, asynq.Config{
		Concurrency: *concurrency, Queues: map[string]int{*queue: 1}, TaskCheckInterval: *checkInterval, LogLevel: asynq.FatalLevel,
	})
	mux := asynq.NewServeMux()
	result := []byte(`{"result":{"kind":"run","status":"ok","output":null,"error":null}}`)
	ttl := strconv.FormatInt((11 * time.Minute).Milliseconds(), 10)
	mux.HandleFunc("bench_noop", func(ctx context.Context, t *asynq.Task) error {
		if !*publish {
			return nil
		}
		id, _ := asynq.GetTaskID(ctx)
		err := rawPublishScript.Run(ctx, rc, []string{"bench:drain:result:" + id}, result, ttl, "bench:drain:done:"+id).Err()
		if errors.Is(err, redis.Nil) {
			return nil
		}
		return err
	})
	// Run returns on SIGTERM or SIGINT, after the running jobs.
	return srv.Run(mux)
}
