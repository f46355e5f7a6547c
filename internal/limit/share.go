package limit

import (
	"context"
	"errors"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/appruntime/appruntime/internal/apperr"
)

// Polling bounds of an enqueue that waits for its workspace's share: a
// slot frees when one of the workspace's jobs ends, which nothing
// announces, so the waiter looks again after shareRetryMin, backing off
// to every shareRetryMax.
const (
	shareRetryMin = 10 * time.Millisecond
	shareRetryMax = 100 * time.Millisecond
)

// Share bounds the jobs one workspace has in a queue class at once
// (enqueued or running), across every api and worker replica: its share of
// the fleet's slots (WORKER_SHARE_<CLASS>), so that one workspace's slow
// jobs leave the others' free slots to start on. A slot is a member of a
// sorted set per queue and workspace, named by the job's id and scored by
// its deadline: the worker frees it when the job ends (ReleaseShare), and a
// job that never reports (its worker died, an operator deleted it) frees
// it at its deadline. It is safe for concurrent use.
type Share struct {
	sems map[string]*Semaphore // by queue name; a queue missing here has no share
	wait time.Duration
}

// NewShare returns the shares of queues (slots per workspace, by queue
// name; a queue given 0 has no share) whose enqueues wait up to wait for a
// slot (WORKER_SHARE_WAIT). Keys start with keyPrefix.
func NewShare(rc redis.UniversalClient, keyPrefix string, slots map[string]int, wait time.Duration) *Share {
	s := &Share{sems: map[string]*Semaphore{}, wait: wait}
	for q, n := range slots {
		if n > 0 {
			// The hold is each job's own deadline (Acquire), never this.
			s.sems[q] = NewSemaphore(rc, keyPrefix, shareName(q), n, time.Minute)
		}
	}
	return s
}

// Slots is how many jobs of queue one workspace may have at once; zero
// when the queue has no share.
func (s *Share) Slots(queue string) int {
	if sem := s.sems[queue]; sem != nil {
		return sem.slots
	}
	return 0
}

// Acquire takes one of workspace's slots of queue for job jobID until
// deadline, waiting up to the share's wait (and no longer than ctx) for
// one to free. Past it the answer is a 429 with a Retry-After (at most
// SemaphoreRetryAfter) naming the share; a Redis that fails is a 503. The
// caller that enqueues nothing after all must ReleaseShare. A queue
// without a share admits at once.
func (s *Share) Acquire(ctx context.Context, queue, workspace, jobID string, deadline time.Time) error {
	return s.acquire(ctx, queue, workspace, jobID, deadline, time.Now().Add(s.wait))
}

// AcquireWaiting is Acquire for a caller that would rather wait than be
// refused (an agent's tool call): it waits until ctx ends.
func (s *Share) AcquireWaiting(ctx context.Context, queue, workspace, jobID string, deadline time.Time) error {
	until := deadline
	if d, ok := ctx.Deadline(); ok && d.Before(until) {
		until = d
	}
	return s.acquire(ctx, queue, workspace, jobID, deadline, until)
}

func (s *Share) acquire(ctx context.Context, queue, workspace, jobID string, deadline, until time.Time) error {
	sem := s.sems[queue]
	if sem == nil {
		return nil
	}
	err := sem.wait(ctx, sem.prefix+workspace, jobID, deadline, until)
	switch {
	case err != nil && ctx.Err() != nil:
		return s.stopped(ctx, queue)
	case errors.Is(err, ErrSlotsTaken):
		refused := apperr.RateLimitedAfter(refusedRetry(err),
			"this workspace already has %d jobs on the %s queue, its share of the workers; retry later", sem.slots, queue)
		refused.Err = ErrSlotsTaken
		return refused
	}
	return err
}

// wait takes a slot of key for token, held until deadline, looking again
// (after shareRetryMin, backing off to shareRetryMax) while every slot is
// taken, until one frees or until passes: then it returns the last
// refusal (ErrSlotsTaken). A Redis that fails is its 503; ctx ending is
// an error the caller tells by ctx.Err().
func (s *Semaphore) wait(ctx context.Context, key, token string, deadline, until time.Time) error {
	poll := shareRetryMin
	for {
		err := s.take(ctx, key, token, max(time.Until(deadline), time.Millisecond))
		if err != nil && ctx.Err() != nil {
			return err
		}
		if !errors.Is(err, ErrSlotsTaken) {
			return err
		}
		left := time.Until(until)
		if left <= 0 {
			return err
		}
		timer := time.NewTimer(min(poll, left))
		select {
		case <-ctx.Done():
			timer.Stop()
			return ctx.Err()
		case <-timer.C:
		}
		poll = min(poll*2, shareRetryMax)
	}
}

// refusedRetry is the Retry-After of a refusal by wait: the wait until
// the earliest slot frees, at least a second.
func refusedRetry(err error) time.Duration {
	retry := SemaphoreRetryAfter
	var e *apperr.Error
	if errors.As(err, &e) {
		retry = e.RetryAfter
	}
	return max(retry, time.Second)
}

// stopped is the error of a wait for a slot that ctx ended.
func (s *Share) stopped(ctx context.Context, queue string) error {
	return apperr.Wrap(ctx.Err(), apperr.Timeout, "no slot of this workspace's share of the %s queue freed in time", queue)
}

// ReleaseShare frees job jobID's slot of workspace's share of queue, on
// rc under keyPrefix (the Share's); the worker calls it when the job ends
// and an enqueue that failed calls it at once. Releasing a slot twice, or
// one never taken, does nothing.
func ReleaseShare(ctx context.Context, rc redis.UniversalClient, keyPrefix, queue, workspace, jobID string) {
	(&Semaphore{rc: rc}).drop(ctx, keyPrefix+"sem:"+shareName(queue)+":"+workspace, jobID)
}

func shareName(queue string) string { return "share:" + queue }
