package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"sort"
	"sync"
	"time"

	"github.com/google/uuid"
	"github.com/hibiken/asynq"
	"github.com/redis/go-redis/v9"
	"github.com/valyala/fasthttp"
)

// The /run phase: a CSV lookup through `appruntime api` and `appruntime
// worker`, against the raw path it is built on, measured in the same run:
// an asynq enqueue to a no-op handler that publishes its result on Redis
// pub/sub, awaited by the enqueuer. Both sides poll for jobs at the same
// task check interval.

// rawQueue is the baseline's queue (the bench's Redis database is its own).
const rawQueue = "bench_raw"

// runOptions configure the /run phase.
type runOptions struct {
	trips         int           // sequential round trips per side
	jobs          int           // the fewest jobs per drain
	rounds        int           // alternating drain rounds
	workers       int           // concurrency of the worker's lookup queue and of the raw server
	servers       int           // asynq servers the worker shares it among (WORKER_SERVERS_LOOKUP)
	checkInterval time.Duration // asynq task check interval of both
}

// rawRoundTrip is the baseline: enqueue, no-op, publish, receive.
type rawRoundTrip struct {
	rc      *redis.Client
	client  *asynq.Client
	mu      sync.Mutex
	waiting map[string]chan struct{}
	ps      *redis.PubSub
}

func newRawRoundTrip(ctx context.Context, rc *redis.Client) (*rawRoundTrip, error) {
	r := &rawRoundTrip{rc: rc, client: asynq.NewClientFromRedisClient(rc), waiting: map[string]chan struct{}{}}
	r.ps = rc.PSubscribe(ctx, "bench:raw:*")
	if _, err := r.ps.Receive(ctx); err != nil {
		return nil, err
	}
	go func() {
		for m := range r.ps.Channel() {
			id := m.Channel[len("bench:raw:"):]
			r.mu.Lock()
			c := r.waiting[id]
			r.mu.Unlock()
			if c != nil {
				close(c)
			}
		}
	}()
	return r, nil
}

func (r *rawRoundTrip) do(ctx context.Context) error {
	id := uuid.NewString()
	done := make(chan struct{})
	r.mu.Lock()
	r.waiting[id] = done
	r.mu.Unlock()
	defer func() { r.mu.Lock(); delete(r.waiting, id); r.mu.Unlock() }()
	if _, err := r.client.EnqueueContext(ctx, asynq.NewTask("bench_noop", []byte(`{}`)), asynq.Queue(rawQueue), asynq.TaskID(id), asynq.MaxRetry(0)); err != nil {
		return err
	}
	select {
	case <-done:
		return nil
	case <-time.After(10 * time.Second):
		return errors.New("raw round trip: no result in 10s")
	}
}

// rawServer runs the round trips' baseline: a no-op handler that publishes
// its result.
func rawServer(rc *redis.Client, o runOptions) (*asynq.Server, error) {
	srv := asynq.NewServerFromRedisClient(rc, asynq.Config{
		Concurrency: o.workers, Queues: map[string]int{rawQueue: 1}, TaskCheckInterval: o.checkInterval, LogLevel: asynq.FatalLevel,
	})
	mux := asynq.NewServeMux()
	mux.HandleFunc("bench_noop", func(ctx context.Context, t *asynq.Task) error {
		id, _ := asynq.GetTaskID(ctx)
		return rc.Publish(ctx, "bench:raw:"+id, "ok").Err()
	})
	return srv, srv.Start(mux)
}

// runPhase measures /run's round trip and the worker's drain against the
// raw baseline and returns run_overhead_ms (project p50 minus raw p50).
func runPhase(ctx context.Context, o runOptions, rc *redis.Client, apiAddr string, tokens []string, fx fixture) (float64, error) {
	srv, err := rawServer(rc, o)
	if err != nil {
		return 0, err
	}
	raw, err := newRawRoundTrip(ctx, rc)
	if err != nil {
		srv.Shutdown()
		return 0, err
	}
	client := &fasthttp.HostClient{Addr: apiAddr, MaxConns: 1, ReadTimeout: 70 * time.Second}
	rnd := rand.New(rand.NewPCG(1, 2))
	project := func(i int) error {
		req, res := fasthttp.AcquireRequest(), fasthttp.AcquireResponse()
		defer fasthttp.ReleaseRequest(req)
		defer fasthttp.ReleaseResponse(res)
		req.SetRequestURI("http://" + apiAddr + "/api/app-runtime/run")
		req.Header.SetMethod("POST")
		req.Header.SetContentType("application/json")
		req.Header.Set("Authorization", "Bearer "+tokens[i%len(tokens)])
		req.SetBody(fmt.Appendf(nil, `{"op":"lookup","payload":{"match_criteria":{"id":"%d"},"return_columns":["name"]}}`, 1+rnd.IntN(rows)))
		if err := client.Do(req, res); err != nil {
			return err
		}
		if res.StatusCode() != 200 || !json.Valid(res.Body()) {
			return fmt.Errorf("/run answered %d: %s", res.StatusCode(), res.Body())
		}
		return nil
	}
	var lat [2][]time.Duration // raw, project
	const rounds = 5
	for i := range o.trips {
		// Warm both paths (the CSV index, connections) before measuring.
		if i == 0 {
			for w := range 20 {
				if err := project(w); err != nil {
					return 0, err
				}
				if err := raw.do(ctx); err != nil {
					return 0, err
				}
			}
		}
		side := (i / max(o.trips/rounds, 1)) % 2 // alternate blocks against drift
		for _, s := range []int{side, 1 - side} {
			t0 := time.Now()
			if s == 0 {
				err = raw.do(ctx)
			} else {
				err = project(i)
			}
			if err != nil {
				return 0, err
			}
			lat[s] = append(lat[s], time.Since(t0))
		}
	}
	_ = raw.ps.Close()
	srv.Shutdown()
	fmt.Printf("\n/run of a CSV lookup (%d sequential round trips each, task check interval %s)\n", o.trips, o.checkInterval)
	fmt.Printf("%-28s %9s %9s\n", "path", "p50", "p99")
	var p50 [2]time.Duration
	for s, name := range []string{"raw enqueue→no-op→pub/sub", "appruntime /run"} {
		sort.Slice(lat[s], func(i, j int) bool { return lat[s][i] < lat[s][j] })
		p50[s] = lat[s][len(lat[s])/2]
		fmt.Printf("%-28s %9s %9s\n", name, ms(p50[s]), ms(lat[s][len(lat[s])*99/100]))
	}

	return float64((p50[1] - p50[0]).Microseconds()) / 1000, nil
}
