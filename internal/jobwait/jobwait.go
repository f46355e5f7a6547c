package jobwait

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/google/uuid"
	"github.com/hibiken/asynq"
	"github.com/redis/go-redis/v9"

	"github.com/appruntime/appruntime/internal/apperr"
	"github.com/appruntime/appruntime/internal/limit"
	"github.com/appruntime/appruntime/jobs"
)

// DeadlineHeader carries a job's absolute deadline (Unix nanoseconds) to the
// worker: asynq keeps deadlines in whole seconds, too coarse for a context
// that must end when the caller stops waiting.
const DeadlineHeader = "jobwait-deadline"

// ShareHeader names the workspace whose share of the job's queue the job
// holds (limit.Share): the worker frees the slot when the job ends.
const ShareHeader = "jobwait-share"

// Polling bounds: a waiter that missed its notification looks for the stored
// result first after pollMin, then backs off to every pollMax.
const (
	pollMin = 20 * time.Millisecond
	pollMax = 250 * time.Millisecond
)

// resultLinger is how long a result stays readable after its deadline, for
// a waiter that polls late.
const resultLinger = time.Minute

// A waiter that has heard nothing for lostAfter looks, every lostAfter, for
// its job in the queue: a job that is not there, or archived, with no
// outcome stored, will never answer (an enqueue the Redis master
// acknowledged and a failover dropped before its replica had it; a job
// whose worker died, archived by asynq's recoverer once its lease
// expired), and the caller hears a 503 then rather than a 504 at a
// deadline that can be minutes away
// (docs/operators.md#redis-sentinel-and-cluster).
const lostAfter = 2 * time.Second

// ErrLost is the outcome of a job that ended with no outcome: the Redis
// that held it lost it (a failover), its worker died (asynq archived it),
// or an operator deleted or archived it on the Queues page. The job may
// have run.
var ErrLost = apperr.New(apperr.Unavailable, "the job ended with no outcome (a Redis failover, a worker that stopped, or an operator); it may have run; retry")

// publishTimeout bounds publishing a result, which runs after the job's
// context may have ended.
const publishTimeout = 2 * time.Second

// enqueueRetryAfter is the Retry-After of the 502 a refused enqueue
// answers, as long as a 503's (web.UnavailableRetryAfter).
const enqueueRetryAfter = 2 * time.Second

// outcome is what a job publishes: its result, or its error's code, message
// and Retry-After.
type outcome struct {
	Result json.RawMessage `json:"result,omitempty"`
	Error  *wireError      `json:"error,omitempty"`
}

type wireError struct {
	Code         apperr.Code `json:"code"`
	Message      string      `json:"message"`
	RetryAfterMS int64       `json:"retry_after_ms,omitempty"`
}

// keys names the Redis keys and channels under a prefix.
type keys string

func (k keys) channelPattern() string   { return string(k) + "jobwait:done:*" }
func (k keys) channel(id string) string { return string(k) + "jobwait:done:" + id }
func (k keys) result(id string) string  { return string(k) + "jobwait:result:" + id }
func (k keys) idOf(channel string) string {
	return strings.TrimPrefix(channel, string(k)+"jobwait:done:")
}

// Waiter enqueues jobs and waits for their results. One per process; it
// keeps one pub/sub connection for every wait, opened by the first wait: a
// process that never waits (a worker) is not sent every job's outcome.
// Safe for concurrent use.
type Waiter struct {
	rc     redis.UniversalClient
	client *asynq.Client
	insp   *asynq.Inspector
	keys   keys
	log    *slog.Logger

	// Share bounds each workspace's jobs per queue (Job.Workspace); nil
	// bounds none. Set it before the first Do.
	Share *limit.Share

	mu      sync.Mutex
	waiting map[string]chan []byte
	ps      *redis.PubSub // nil until the first wait
	closed  bool
	done    chan struct{} // closed when dispatch returns
}

// NewWaiter returns a Waiter on rc whose keys and channels start with
// keyPrefix (the Handler's must be the same). Close stops it.
func NewWaiter(rc redis.UniversalClient, keyPrefix string, log *slog.Logger) *Waiter {
	return &Waiter{
		rc: rc, client: asynq.NewClientFromRedisClient(rc), insp: asynq.NewInspectorFromRedisClient(rc), keys: keys(keyPrefix), log: log,
		waiting: map[string]chan []byte{}, done: make(chan struct{}),
	}
}

// listen subscribes to the outcomes unless it has already or the Waiter is
// closed. PSubscribe sends its command at once and (re)connects in the
// background; a result published before the subscription is live is found
// by polling.
func (w *Waiter) listen() {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.ps != nil || w.closed {
		return
	}
	w.ps = w.rc.PSubscribe(context.Background(), w.keys.channelPattern())
	go w.dispatch(w.ps.Channel(redis.WithChannelSize(1024)))
}

// dispatch hands each notification to its waiter.
func (w *Waiter) dispatch(ch <-chan *redis.Message) {
	defer close(w.done)
	for m := range ch {
		id := w.keys.idOf(m.Channel)
		w.mu.Lock()
		c := w.waiting[id]
		w.mu.Unlock()
		if c != nil {
			select {
			case c <- []byte(m.Payload):
			default:
			}
		}
	}
}

// Close stops listening for notifications; waits in progress fall back to
// polling until their deadlines.
func (w *Waiter) Close() {
	w.mu.Lock()
	ps := w.ps
	w.closed = true
	w.mu.Unlock()
	if ps != nil {
		_ = ps.Close()
		<-w.done
	}
}

// Job is one job to run and wait for.
type Job struct {
	Args  jobs.Args
	Queue string
	// Deadline is when the caller stops waiting (504) and the worker's
	// context ends.
	Deadline time.Time
	// Headers travel with the job (the request id).
	Headers map[string]string
	// Workspace is the workspace whose share of Queue the job takes
	// (Waiter.Share): past it Do waits up to the share's wait, then
	// answers 429. Empty takes no share.
	Workspace string
	// WaitForShare makes Do wait for a slot of the workspace's share until
	// the deadline rather than be refused: for a caller that has no one
	// to tell "retry later" (an agent's tool call).
	WaitForShare bool
}

// Do enqueues job under a fresh task id with no retries and waits for its
// outcome until its deadline or ctx ends. A job's error comes back with its
// code and message; a deadline that passes is a 504; a Redis that refuses
// the enqueue is a 502 with a Retry-After; a job the queue lost is ErrLost
// (503). A job of a workspace first takes a slot of its share
// (Job.Workspace): a workspace past its share is a 429 with a Retry-After,
// and a Redis that cannot count it a 503.
func (w *Waiter) Do(ctx context.Context, job Job) (json.RawMessage, error) {
	w.listen()
	id := uuid.NewString()
	ch := make(chan []byte, 1)
	w.mu.Lock()
	w.waiting[id] = ch
	w.mu.Unlock()
	defer func() {
		w.mu.Lock()
		delete(w.waiting, id)
		w.mu.Unlock()
	}()
	ctx, cancel := context.WithDeadline(ctx, job.Deadline)
	defer cancel()

	headers := map[string]string{DeadlineHeader: strconv.FormatInt(job.Deadline.UnixNano(), 10)}
	for k, v := range job.Headers {
		headers[k] = v
	}
	if job.Workspace != "" && w.Share != nil {
		if err := w.takeShare(ctx, job, id); err != nil {
			return nil, err
		}
		headers[ShareHeader] = job.Workspace
	}
	task, err := jobs.NewTaskWithHeaders(job.Args, headers)
	if err != nil {
		w.releaseShare(ctx, job, id)
		return nil, err
	}
	// asynq's deadline is whole seconds: round up, so that the context the
	// worker derives from DeadlineHeader is what ends the job.
	asynqDeadline := job.Deadline.Truncate(time.Second).Add(time.Second)
	if _, err := w.client.EnqueueContext(ctx, task,
		asynq.Queue(job.Queue), asynq.TaskID(id), asynq.MaxRetry(0), asynq.Deadline(asynqDeadline),
	); err != nil {
		w.releaseShare(ctx, job, id)
		if ctx.Err() != nil {
			return nil, stopped(ctx)
		}
		// Seed 000's 502 for a broker that cannot be reached, with a
		// Retry-After: a failover's window is about a second
		// (docs/operators.md#redis-sentinel-and-cluster).
		e := apperr.Wrap(err, apperr.BadGateway, "the job queue cannot be reached; retry")
		e.RetryAfter = enqueueRetryAfter
		return nil, e
	}
	out, err := w.wait(ctx, job.Queue, id, ch)
	if errors.Is(err, ErrLost) {
		// The slot went with the job, or it is freed now rather than at
		// the deadline.
		w.releaseShare(context.WithoutCancel(ctx), job, id)
	}
	return out, err
}

// takeShare takes job id's slot of its workspace's share, until its
// deadline.
func (w *Waiter) takeShare(ctx context.Context, job Job, id string) error {
	if job.WaitForShare {
		return w.Share.AcquireWaiting(ctx, job.Queue, job.Workspace, id, job.Deadline)
	}
	return w.Share.Acquire(ctx, job.Queue, job.Workspace, id, job.Deadline)
}

// releaseShare frees the slot of a job that was never enqueued.
func (w *Waiter) releaseShare(ctx context.Context, job Job, id string) {
	if job.Workspace != "" && w.Share != nil {
		limit.ReleaseShare(ctx, w.rc, string(w.keys), job.Queue, job.Workspace, id)
	}
}

// wait returns the outcome of job id (in queue) from its notification or,
// failing that, its stored result; ErrLost when the job left the queue
// with neither.
func (w *Waiter) wait(ctx context.Context, queue, id string, ch <-chan []byte) (json.RawMessage, error) {
	poll := pollMin
	timer := time.NewTimer(poll)
	defer timer.Stop()
	nextLook := time.Now().Add(lostAfter)
	for {
		select {
		case msg := <-ch:
			return decode(msg)
		case <-ctx.Done():
			return nil, stopped(ctx)
		case <-timer.C:
			// A handler stores its outcome before asynq deletes or
			// archives its task: a task found gone or archived before the
			// result is read, with no result, is a job lost.
			gone := false
			if now := time.Now(); !now.Before(nextLook) {
				nextLook = now.Add(lostAfter)
				state, err := w.rc.HGet(ctx, taskKey(queue, id), "state").Result()
				gone = errors.Is(err, redis.Nil) || (err == nil && state == "archived" && w.archivedUnanswered(queue, id))
			}
			msg, err := w.rc.Get(ctx, w.keys.result(id)).Bytes()
			switch {
			case err == nil:
				return decode(msg)
			case errors.Is(err, redis.Nil) && gone:
				w.log.WarnContext(ctx, "jobwait: the job ended with no outcome", "task_id", id, "queue", queue)
				return nil, ErrLost
			case !errors.Is(err, redis.Nil) && ctx.Err() == nil:
				w.log.WarnContext(ctx, "jobwait: poll failed", "task_id", id, "error", err.Error())
			}
			poll = min(poll*2, pollMax)
			timer.Reset(poll)
		}
	}
}

// archivedUnanswered says whether archived task id ended without its
// handler: never run (an operator's Archive), or run by a worker that died
// (the recoverer's "task lease expired"). asynq archives a task whose
// context ended (an operator's Cancel, asynq's own deadline) without
// waiting for its handler, which is about to store its outcome
// (ErrCanceled): such a task is not taken for lost. Called only for an
// archived task, which is rare: its last error is in the task's encoded
// message, read through the inspector.
func (w *Waiter) archivedUnanswered(queue, id string) bool {
	ti, err := w.insp.GetTaskInfo(queue, id)
	if err != nil {
		return false
	}
	return ti.LastErr != context.Canceled.Error() && ti.LastErr != context.DeadlineExceeded.Error()
}

// taskKey is the hash asynq keeps a task in from its enqueue until it is
// done (asynq's base.TaskKey; a job Do enqueues is kept no longer:
// no Retention), its "state" field "archived" once archived.
// TestALostJobIs503AtOnce fails if asynq moves either.
func taskKey(queue, id string) string { return "asynq:{" + queue + "}:t:" + id }

func stopped(ctx context.Context) error {
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		return apperr.Wrap(ctx.Err(), apperr.Timeout, "the job did not finish before its deadline")
	}
	return fmt.Errorf("jobwait: %w", ctx.Err())
}

func decode(msg []byte) (json.RawMessage, error) {
	var o outcome
	if err := json.Unmarshal(msg, &o); err != nil {
		return nil, fmt.Errorf("jobwait: decode outcome: %w", err)
	}
	if o.Error != nil {
		e := apperr.New(o.Error.Code, "%s", o.Error.Message)
		e.RetryAfter = time.Duration(o.Error.RetryAfterMS) * time.Millisecond
		return nil, e
	}
	return o.Result, nil
}

// HandlerFunc runs one job whose context ends at the caller's deadline. Its
// error's code and message reach the caller (an error without a code is a
// 500 whose detail stays in the worker's log).
type HandlerFunc func(ctx context.Context, t *asynq.Task) (json.RawMessage, error)

// ErrCanceled is the outcome of a job cancelled while it ran (the Queues
// page's Cancel, asynq.Inspector.CancelProcessing): the caller hears it at
// once, as a conflict, rather than waiting out the deadline or being told
// the deadline passed.
var ErrCanceled = apperr.New(apperr.Conflict, "the job was cancelled by an operator before it finished")

// Handler wraps fn as an asynq handler for jobs enqueued by Waiter.Do: fn
// runs with a context ending at the job's deadline, and its outcome is
// stored and published once, under the same keyPrefix as the Waiter's. A
// job whose asynq context is cancelled before the deadline publishes
// ErrCanceled, whatever fn made of its ended context. Outcomes of jobs that
// finish together are sent in one round trip (publisher); mount one
// Handler on every queue that runs fn rather than one per queue. A job
// that holds a slot of its workspace's share (ShareHeader) frees it as it
// ends, before its outcome is published, so that its caller's next job
// finds the slot free.
func Handler(rc redis.UniversalClient, keyPrefix string, fn HandlerFunc) asynq.Handler {
	k := keys(keyPrefix)
	pub := newPublisher(rc)
	return asynq.HandlerFunc(func(jobCtx context.Context, t *asynq.Task) error {
		id, _ := asynq.GetTaskID(jobCtx)
		deadline, err := headerDeadline(t)
		if err != nil {
			return fmt.Errorf("jobwait: %v: %w", err, asynq.SkipRetry)
		}
		ctx, cancel := context.WithDeadline(jobCtx, deadline)
		defer cancel()
		if ctx.Err() != nil {
			// Picked up after the caller gave up: do nothing.
			releaseShare(jobCtx, rc, keyPrefix, t, id)
			return nil
		}
		result, runErr := fn(ctx, t)
		releaseShare(jobCtx, rc, keyPrefix, t, id)
		o := outcome{Result: result}
		if runErr != nil {
			o = outcome{Error: toWire(runErr)}
		}
		canceled := errors.Is(jobCtx.Err(), context.Canceled) && time.Now().Before(deadline)
		switch {
		case canceled:
			o = outcome{Error: toWire(ErrCanceled)}
		case ctx.Err() != nil:
			// Finished too late, or stopped by the deadline: the caller
			// answers 504, and so must a waiter that hears this outcome
			// before its own deadline fires, or a late poller.
			o = outcome{Error: toWire(apperr.New(apperr.Timeout, "the job did not finish before its deadline"))}
		}
		if err := publish(pub, k, id, o, deadline); err != nil {
			return err
		}
		if canceled {
			return fmt.Errorf("jobwait: %w: %w", ErrCanceled, asynq.SkipRetry)
		}
		if runErr != nil && apperr.CodeOf(runErr) == apperr.Internal {
			return fmt.Errorf("jobwait: %w: %w", runErr, asynq.SkipRetry)
		}
		return nil
	})
}

// releaseShare frees the share slot job t (id) holds, if it holds one.
func releaseShare(jobCtx context.Context, rc redis.UniversalClient, keyPrefix string, t *asynq.Task, id string) {
	if ws := t.Headers()[ShareHeader]; ws != "" {
		queue, _ := asynq.GetQueueName(jobCtx)
		limit.ReleaseShare(jobCtx, rc, keyPrefix, queue, ws, id)
	}
}

func headerDeadline(t *asynq.Task) (time.Time, error) {
	ns, err := strconv.ParseInt(t.Headers()[DeadlineHeader], 10, 64)
	if err != nil {
		return time.Time{}, fmt.Errorf("job %s has no %s header", t.Type(), DeadlineHeader)
	}
	return time.Unix(0, ns), nil
}

func toWire(err error) *wireError {
	var e *apperr.Error
	code, _, msg := apperr.Public(err)
	w := &wireError{Code: code, Message: msg}
	if errors.As(err, &e) && e.RetryAfter > 0 {
		w.RetryAfterMS = e.RetryAfter.Milliseconds()
	}
	return w
}

// publishScript stores an outcome unless one is stored already, and only
// then publishes it: one round trip.
var publishScript = redis.NewScript(`
if redis.call('SET', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2]) then
  redis.call('PUBLISH', ARGV[3], ARGV[1])
  return 1
end
return 0
`)

// publish stores the outcome (once: a second run of the same job finds it
// stored and publishes nothing) and notifies the waiter. It runs after the
// job's context may have ended, bounded by publishTimeout.
func publish(pub *publisher, k keys, id string, o outcome, deadline time.Time) error {
	msg, err := json.Marshal(o)
	if err != nil {
		return fmt.Errorf("jobwait: encode outcome: %w", err)
	}
	ttl := time.Until(deadline) + resultLinger
	if err := pub.publish(&pendingOutcome{key: k.result(id), channel: k.channel(id), msg: msg, ttlMS: ttl.Milliseconds()}); err != nil {
		// The waiter still finds a stored outcome by polling.
		return fmt.Errorf("jobwait: publish outcome: %w", err)
	}
	return nil
}
