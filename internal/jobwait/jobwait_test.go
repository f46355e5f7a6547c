package jobwait_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hibiken/asynq"
	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/appruntime/appruntime/internal/apperr"
	"github.com/appruntime/appruntime/internal/jobwait"
	"github.com/appruntime/appruntime/internal/limit"
	"github.com/appruntime/appruntime/internal/testkit"
)

type echoArgs struct {
	Say  string `json:"say"`
	Fail string `json:"fail"`
}

func (echoArgs) Kind() string { return "jobwait_test_echo" }

// serve runs an asynq server on env's lookup queue with fn behind Handler.
func serve(t *testing.T, env testkit.RedisEnv, fn jobwait.HandlerFunc) {
	t.Helper()
	srv := asynq.NewServerFromRedisClient(env.Client, asynq.Config{
		Concurrency: 4, Queues: map[string]int{env.Queues.Lookup: 1},
		TaskCheckInterval: 5 * time.Millisecond, LogLevel: asynq.FatalLevel,
	})
	mux := asynq.NewServeMux()
	mux.Handle(echoArgs{}.Kind(), jobwait.Handler(env.Client, env.Prefix, fn))
	if err := srv.Start(mux); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Shutdown)
}

func echo(ctx context.Context, task *asynq.Task) (json.RawMessage, error) {
	var a echoArgs
	if err := json.Unmarshal(task.Payload(), &a); err != nil {
		return nil, err
	}
	if a.Fail != "" {
		return nil, apperr.RateLimitedAfter(3*time.Second, "%s", a.Fail)
	}
	return json.Marshal(map[string]string{"said": a.Say})
}

func newWaiter(t *testing.T, env testkit.RedisEnv) *jobwait.Waiter {
	w := jobwait.NewWaiter(env.Client, env.Prefix, slog.New(slog.NewTextHandler(io.Discard, nil)))
	t.Cleanup(w.Close)
	return w
}

// TestDoReturnsResultAndErrors runs on one Redis and on a three-master
// Cluster: there the outcomes' keys spread over the nodes (a burst of
// concurrent jobs sends their scripts in one pipeline, split by node) and
// the waiter's pattern subscription hears what a node other than its own
// published.
func TestDoReturnsResultAndErrors(t *testing.T) {
	t.Parallel()
	for _, mode := range []struct {
		name string
		env  func(testing.TB) testkit.RedisEnv
	}{{"redis", testkit.Redis}, {"cluster", testkit.ClusterRedis}} {
		t.Run(mode.name, func(t *testing.T) {
			t.Parallel()
			doReturnsResultAndErrors(t, mode.env(t))
		})
	}
}

func doReturnsResultAndErrors(t *testing.T, env testkit.RedisEnv) {
	serve(t, env, echo)
	w := newWaiter(t, env)
	ctx := context.Background()
	job := func(a echoArgs) jobwait.Job {
		return jobwait.Job{Args: a, Queue: env.Queues.Lookup, Deadline: time.Now().Add(10 * time.Second)}
	}

	got, err := w.Do(ctx, job(echoArgs{Say: "hi"}))
	if err != nil || string(got) != `{"said":"hi"}` {
		t.Fatalf("Do = %s, %v", got, err)
	}
	_, err = w.Do(ctx, job(echoArgs{Fail: "slow down"}))
	var e *apperr.Error
	if !apperr.Is(err, apperr.RateLimited) || !errors.As(err, &e) || e.Message != "slow down" || e.RetryAfter != 3*time.Second {
		t.Fatalf("Do of a failing job = %v, want rate_limited 'slow down' retry 3s", err)
	}
	var wg sync.WaitGroup
	errs := make([]error, 16)
	for i := range errs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			say := strconv.Itoa(i)
			got, err := w.Do(ctx, job(echoArgs{Say: say}))
			if err == nil && string(got) != `{"said":"`+say+`"}` {
				err = fmt.Errorf("job %d answered %s", i, got)
			}
			errs[i] = err
		}()
	}
	wg.Wait()
	require.NoError(t, errors.Join(errs...))
}

// TestDeadlineCancelsWorker: past the deadline Do answers 504 and the
// handler's context ends at that same moment, not at asynq's whole second.
func TestDeadlineCancelsWorker(t *testing.T) {
	t.Parallel()
	env := testkit.Redis(t)
	stoppedAt := make(chan time.Time, 1)
	serve(t, env, func(ctx context.Context, _ *asynq.Task) (json.RawMessage, error) {
		<-ctx.Done()
		stoppedAt <- time.Now()
		return nil, ctx.Err()
	})
	w := newWaiter(t, env)
	deadline := time.Now().Add(700 * time.Millisecond)
	_, err := w.Do(context.Background(), jobwait.Job{Args: echoArgs{}, Queue: env.Queues.Lookup, Deadline: deadline})
	answered := time.Now()
	if !apperr.Is(err, apperr.Timeout) {
		t.Fatalf("Do past its deadline = %v, want timeout", err)
	}
	if answered.Before(deadline) {
		t.Fatalf("Do answered %v before its deadline", deadline.Sub(answered))
	}
	select {
	case at := <-stoppedAt:
		if d := at.Sub(deadline); d < 0 || d > 200*time.Millisecond {
			t.Fatalf("the handler's context ended %v after the deadline, want at it", d)
		}
	case <-time.After(3 * time.Second):
		t.Fatal("the handler's context never ended")
	}
}

// TestPollingFallback: with no pub/sub listener the result is still found.
func TestPollingFallback(t *testing.T) {
	t.Parallel()
	env := testkit.Redis(t)
	serve(t, env, echo)
	w := jobwait.NewWaiter(env.Client, env.Prefix, slog.New(slog.NewTextHandler(io.Discard, nil)))
	w.Close()
	got, err := w.Do(context.Background(), jobwait.Job{Args: echoArgs{Say: "polled"}, Queue: env.Queues.Lookup, Deadline: time.Now().Add(5 * time.Second)})
	if err != nil || string(got) != `{"said":"polled"}` {
		t.Fatalf("Do without pub/sub = %s, %v", got, err)
	}
}

// TestUnreachableRedisIs502 enqueues to a port where nothing listens: a
// 502 that tells the caller when to retry.
func TestUnreachableRedisIs502(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	rc := redis.NewClient(&redis.Options{Addr: addr, MaxRetries: -1, DialTimeout: 200 * time.Millisecond})
	defer rc.Close()
	w := jobwait.NewWaiter(rc, "x:", slog.New(slog.NewTextHandler(io.Discard, nil)))
	defer w.Close()
	_, err = w.Do(context.Background(), jobwait.Job{Args: echoArgs{}, Queue: "q", Deadline: time.Now().Add(5 * time.Second)})
	if apperr.Status(apperr.CodeOf(err)) != 502 || apperr.RetryAfterSeconds(err) != 2 {
		t.Fatalf("Do with Redis down = %v (Retry-After %d s), want a 502 with Retry-After 2", err, apperr.RetryAfterSeconds(err))
	}
}

// TestShareBoundsAWorkspacesJobs: with a share of one, a workspace's
// second job is refused while its first runs (or waits for it, when it
// asks to), another workspace's job runs at once, and the slot is free
// again once the job ended, before its caller hears the outcome.
func TestShareBoundsAWorkspacesJobs(t *testing.T) {
	t.Parallel()
	env := testkit.Redis(t)
	release := make(chan struct{}) // holds the "slow" job until the test says
	var once sync.Once
	free := func() { once.Do(func() { close(release) }) }
	t.Cleanup(free) // a failed assertion must not leave the worker stuck
	serve(t, env, func(ctx context.Context, task *asynq.Task) (json.RawMessage, error) {
		var a echoArgs
		if err := json.Unmarshal(task.Payload(), &a); err != nil {
			return nil, err
		}
		if a.Say == "slow" {
			<-release
		}
		return echo(ctx, task)
	})
	w := newWaiter(t, env)
	w.Share = limit.NewShare(env.Client, env.Prefix, map[string]int{env.Queues.Lookup: 1}, 100*time.Millisecond)
	ctx := context.Background()
	job := func(ws string, a echoArgs) jobwait.Job {
		return jobwait.Job{Args: a, Queue: env.Queues.Lookup, Deadline: time.Now().Add(10 * time.Second), Workspace: ws}
	}

	first := make(chan error, 1)
	go func() {
		_, err := w.Do(ctx, job("ws-a", echoArgs{Say: "slow"}))
		first <- err
	}()
	key := env.Prefix + "sem:share:" + env.Queues.Lookup + ":ws-a"
	require.Eventually(t, func() bool { return env.Client.ZCard(ctx, key).Val() == 1 }, 5*time.Second, 5*time.Millisecond)

	_, err := w.Do(ctx, job("ws-a", echoArgs{Say: "second"}))
	require.Equal(t, apperr.RateLimited, apperr.CodeOf(err), "past its share: %v", err)
	require.GreaterOrEqual(t, apperr.RetryAfterSeconds(err), 1)

	got, err := w.Do(ctx, job("ws-b", echoArgs{Say: "other"}))
	require.NoError(t, err, "another workspace's job does not wait for the first")
	require.JSONEq(t, `{"said":"other"}`, string(got))
	require.EqualValues(t, 1, env.Client.ZCard(ctx, key).Val(), "it ran while the first still held its slot")
	free()

	waiting := job("ws-a", echoArgs{Say: "patient"})
	waiting.WaitForShare = true
	got, err = w.Do(ctx, waiting)
	require.NoError(t, err, "a caller that waits for its share runs once the first job ended")
	require.JSONEq(t, `{"said":"patient"}`, string(got))
	require.NoError(t, <-first)
	require.Zero(t, env.Client.ZCard(ctx, key).Val(), "every job freed its slot when it ended")
}

// TestALostJobIs503AtOnce: a job that ends with no outcome is a 503 about
// two seconds later, not a 504 at its deadline, and it frees its
// workspace's share slot: one that leaves the queue (the enqueue a
// failed-over Redis master acknowledged and its replica never had, here
// deleted by hand) and one archived (as asynq's recoverer archives the job
// of a worker that died, here by hand). A job that waits in the queue
// longer than that is not taken for lost (no worker serves the queue) and
// ends at its deadline. A job done or archived with its outcome stored
// (slow, so that the waiter looks for its task while it runs) answers that
// outcome.
func TestALostJobIs503AtOnce(t *testing.T) {
	t.Parallel()
	env := testkit.Redis(t)
	w := newWaiter(t, env)
	w.Share = limit.NewShare(env.Client, env.Prefix, map[string]int{env.Queues.Lookup: 1}, 100*time.Millisecond)
	insp := asynq.NewInspectorFromRedisClient(env.Client)
	ctx := context.Background()
	slots := env.Prefix + "sem:share:" + env.Queues.Lookup + ":ws-a"

	// Pending past the lost check, then at its deadline: a 504.
	deadline := time.Now().Add(3 * time.Second)
	_, err := w.Do(ctx, jobwait.Job{Args: echoArgs{Say: "waits"}, Queue: env.Queues.Lookup, Deadline: deadline})
	require.Equal(t, apperr.Timeout, apperr.CodeOf(err), "a job still queued is not lost: %v", err)
	require.False(t, time.Now().Before(deadline))

	// Ended while its caller waits: a 503 within a few seconds of a 30 s
	// deadline, and the slot is free.
	for how, end := range map[string]func(queue, id string) error{"deleted": insp.DeleteTask, "archived": insp.ArchiveTask} {
		lost := make(chan error, 1)
		start := time.Now()
		go func() {
			_, err := w.Do(ctx, jobwait.Job{Args: echoArgs{Say: how}, Queue: env.Queues.Lookup, Deadline: time.Now().Add(30 * time.Second), Workspace: "ws-a"})
			lost <- err
		}()
		var id string
		require.Eventually(t, func() bool {
			tasks, _ := insp.ListPendingTasks(env.Queues.Lookup)
			for _, ti := range tasks {
				if strings.Contains(string(ti.Payload), `"`+how+`"`) {
					id = ti.ID
				}
			}
			return id != ""
		}, 5*time.Second, 10*time.Millisecond)
		require.NoError(t, end(env.Queues.Lookup, id))
		select {
		case err := <-lost:
			require.ErrorIs(t, err, jobwait.ErrLost, how)
			require.Equal(t, 503, apperr.Status(apperr.CodeOf(err)))
			require.Less(t, time.Since(start), 6*time.Second, how)
		case <-time.After(10 * time.Second):
			t.Fatalf("the caller of a job %s waited for its deadline", how)
		}
		require.Zero(t, env.Client.ZCard(ctx, slots).Val(), "the %s job's share slot is free", how)
	}

	// Done, its task gone, or failed, its task archived, each with its
	// outcome stored: that outcome.
	serve(t, env, func(ctx context.Context, task *asynq.Task) (json.RawMessage, error) {
		time.Sleep(2500 * time.Millisecond) // past the first look for the task
		var a echoArgs
		if err := json.Unmarshal(task.Payload(), &a); err == nil && a.Say == "broken" {
			return nil, errors.New("the tool broke") // an internal error: the task is archived
		}
		return echo(ctx, task)
	})
	w2 := jobwait.NewWaiter(env.Client, env.Prefix, slog.New(slog.NewTextHandler(io.Discard, nil)))
	w2.Close() // no notification: the outcome is found by polling
	got, err := w2.Do(ctx, jobwait.Job{Args: echoArgs{Say: "slow but there"}, Queue: env.Queues.Lookup, Deadline: time.Now().Add(20 * time.Second)})
	require.NoError(t, err)
	require.JSONEq(t, `{"said":"slow but there"}`, string(got))
	_, err = w2.Do(ctx, jobwait.Job{Args: echoArgs{Say: "broken"}, Queue: env.Queues.Lookup, Deadline: time.Now().Add(20 * time.Second)})
	require.NotErrorIs(t, err, jobwait.ErrLost)
	require.Equal(t, apperr.Internal, apperr.CodeOf(err), "%v", err)
	require.Eventually(t, func() bool {
		archived, _ := insp.ListArchivedTasks(env.Queues.Lookup)
		for _, ti := range archived {
			if strings.Contains(string(ti.Payload), `"broken"`) {
				return true
			}
		}
		return false
	}, 5*time.Second, 20*time.Millisecond, "the failed job's task is archived")
}

// TestACancelledJobIsNotTakenForLost: asynq archives a job whose context an
// operator cancelled without waiting for its handler, which stores
// ErrCanceled when it returns (here 2.5 s later, past the waiter's look at
// the archived task): the caller hears that 409, not ErrLost.
func TestACancelledJobIsNotTakenForLost(t *testing.T) {
	t.Parallel()
	env := testkit.Redis(t)
	running := make(chan string, 1)
	serve(t, env, func(ctx context.Context, _ *asynq.Task) (json.RawMessage, error) {
		id, _ := asynq.GetTaskID(ctx)
		running <- id
		<-ctx.Done()
		time.Sleep(2500 * time.Millisecond) // a handler slow to stop
		return nil, ctx.Err()
	})
	w := newWaiter(t, env)
	insp := asynq.NewInspectorFromRedisClient(env.Client)
	answered := make(chan error, 1)
	go func() {
		_, err := w.Do(context.Background(), jobwait.Job{Args: echoArgs{}, Queue: env.Queues.Lookup, Deadline: time.Now().Add(30 * time.Second)})
		answered <- err
	}()
	id := <-running
	require.NoError(t, insp.CancelProcessing(id))
	require.Eventually(t, func() bool {
		ti, err := insp.GetTaskInfo(env.Queues.Lookup, id)
		return err == nil && ti.State == asynq.TaskStateArchived
	}, 5*time.Second, 10*time.Millisecond, "asynq archives a cancelled job at once")
	select {
	case err := <-answered:
		require.NotErrorIs(t, err, jobwait.ErrLost)
		require.Equal(t, apperr.Conflict, apperr.CodeOf(err), "%v", err)
		require.Contains(t, err.Error(), "cancelled by an operator")
	case <-time.After(15 * time.Second):
		t.Fatal("the caller of a cancelled job was not answered")
	}
}
