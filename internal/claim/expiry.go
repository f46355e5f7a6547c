package claim

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/hibiken/asynq"
	"github.com/redis/go-redis/v9"

	"github.com/appruntime/appruntime/jobs"
	"github.com/appruntime/appruntime/models"
)

// Scheduler schedules each review claim's expiry job on the events
// queue, at the claim's expiry (Queue's AfterClaimFunc). It enqueues from
// a goroutine of its own, so a claim's reply does not wait for Redis.
type Scheduler struct {
	client  *asynq.Client
	queue   string
	log     *slog.Logger
	pending chan ReviewClaim
	stop    chan struct{}
	done    chan struct{}
}

// claimBacklog bounds the claims waiting for their expiry job to be
// enqueued; past it a claim's job is dropped (its claim still ends at its
// time: the queue treats a claim past its time as free).
const claimBacklog = 4096

// NewScheduler returns a Scheduler enqueueing on queue through
// rdb; Close stops it.
func NewScheduler(rdb redis.UniversalClient, queue string, log *slog.Logger) *Scheduler {
	s := &Scheduler{client: asynq.NewClientFromRedisClient(rdb), queue: queue, log: log,
		pending: make(chan ReviewClaim, claimBacklog), stop: make(chan struct{}), done: make(chan struct{})}
	go s.run()
	return s
}

// ExpiryTaskID is the job id of the expiry of the claim on taskID that
// expires at expiresAt: one job per claim.
func ExpiryTaskID(taskID string, expiresAt time.Time) string {
	return fmt.Sprintf("claim_expiry:%s:%d", taskID, expiresAt.UnixMicro())
}

// Schedule hands c's expiry job to the scheduler and returns at once. A
// job that cannot be enqueued is logged, not returned: the queue treats a
// claim past its time as free whether or not the job runs.
func (s *Scheduler) Schedule(ctx context.Context, c ReviewClaim) {
	select {
	case s.pending <- c:
	default:
		s.log.WarnContext(ctx, "claim: claim expiry backlog full; the claim still ends at its time", "task_id", c.TaskID)
	}
}

// run enqueues the handed claims' jobs until Close, then those still
// pending.
func (s *Scheduler) run() {
	defer close(s.done)
	for {
		select {
		case c := <-s.pending:
			s.enqueue(c)
		case <-s.stop:
			for {
				select {
				case c := <-s.pending:
					s.enqueue(c)
				default:
					return
				}
			}
		}
	}
}

// enqueueTimeout bounds one enqueue, so a Redis outage does not hold the
// backlog for longer than the claims it holds.
const enqueueTimeout = 5 * time.Second

func (s *Scheduler) enqueue(c ReviewClaim) {
	ctx, cancel := context.WithTimeout(context.Background(), enqueueTimeout)
	defer cancel()
	task, opts, err := expiryJob(c.TaskID, c.ClaimExpiresAt, s.queue)
	if err == nil {
		_, err = s.client.EnqueueContext(ctx, task, opts...)
	}
	if err != nil && !errors.Is(err, asynq.ErrTaskIDConflict) {
		s.log.Warn("claim: schedule claim expiry; the claim still ends at its time", "task_id", c.TaskID, "error", err.Error())
	}
}

// Close enqueues the claims already handed over, then releases the
// scheduler's client (not the Redis client it shares). Schedule after
// Close does nothing that lasts.
func (s *Scheduler) Close() {
	select {
	case <-s.stop:
	default:
		close(s.stop)
	}
	<-s.done
	_ = s.client.Close()
}

// expiryJob is the expiry job of the claim on taskID that expires at
// expiresAt, on queue.
func expiryJob(taskID string, expiresAt time.Time, queue string) (*asynq.Task, []asynq.Option, error) {
	task, err := jobs.NewTask(jobs.ClaimExpiry{TaskID: taskID, ExpiresAt: expiresAt})
	if err != nil {
		return nil, nil, err
	}
	return task, []asynq.Option{asynq.TaskID(ExpiryTaskID(taskID, expiresAt)), asynq.Queue(queue),
		asynq.ProcessAt(expiresAt), asynq.Retention(time.Hour), asynq.Timeout(jobs.EventsDeadline)}, nil
}

// owedClaimBatch bounds the claims one OwedClaimExpiries returns.
const owedClaimBatch = 1000

// OwedClaimExpiries returns the expiry jobs, on queue, of the claims whose
// time ran out before now and which are still held, oldest first: the
// claims table (tasks.claim_expires_at) is their record, and the worker's
// sweep enqueues them again in case Redis lost them; each keeps its task
// id, so one Redis still holds is refused as a duplicate.
func (q *Queue) OwedClaimExpiries(ctx context.Context, now time.Time, queue string) ([]jobs.Owed, error) {
	var tasks []models.Task
	err := q.store.DB.WithContext(ctx).Select("id", "claim_expires_at").
		Where("claimed_by IS NOT NULL AND claim_expires_at <= ?", now.UTC()).
		Order("claim_expires_at, id").Limit(owedClaimBatch).Find(&tasks).Error
	if err != nil {
		return nil, fmt.Errorf("claim: select expired claims: %w", err)
	}
	owed := make([]jobs.Owed, 0, len(tasks))
	for _, t := range tasks {
		task, opts, err := expiryJob(t.ID, *t.ClaimExpiresAt, queue)
		if err != nil {
			return nil, err
		}
		owed = append(owed, jobs.Owed{ID: ExpiryTaskID(t.ID, *t.ClaimExpiresAt), Due: *t.ClaimExpiresAt, Task: task, Opts: opts})
	}
	return owed, nil
}
