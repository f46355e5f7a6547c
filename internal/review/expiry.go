package review

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/hibiken/asynq"
	"github.com/redis/go-redis/v9"
	"gorm.io/gorm"

	"github.com/appruntime/appruntime/internal/apperr"
	"github.com/appruntime/appruntime/internal/outbox"
	"github.com/appruntime/appruntime/internal/store"
	"github.com/appruntime/appruntime/jobs"
	"github.com/appruntime/appruntime/models"
)

// ReasonExpired is the reason of an await its configured tool's
// await_expiry_seconds released (docs/architecture.md#3-parked-tasks-are-seen).
const ReasonExpired = "expired"

// ExpiryActor names who released an expired await.
const ExpiryActor = "system:expiry"

// AwaitExpiryPayload is the outbox row that schedules an await's expiry:
// the relay enqueues its job to run at DueAt.
type AwaitExpiryPayload struct {
	outbox.Scheduled
	AwaitID     string `json:"await_id"`
	WorkspaceID string `json:"workspace_id"`
}

// ScheduleAwaitExpiry writes, inside tx (the transaction that creates the
// await), the outbox row that releases awaitID at due unless something
// released it first.
func ScheduleAwaitExpiry(tx *gorm.DB, workspaceID, awaitID string, due time.Time) error {
	due = due.UTC()
	_, err := outbox.Add(tx, outbox.KindAwaitExpiry, AwaitExpiryPayload{
		Scheduled: outbox.Scheduled{DueAt: &due}, AwaitID: awaitID, WorkspaceID: workspaceID,
	})
	return err
}

// Expire is the await expiry job of outbox row outboxID: it releases the
// await with reason expired, exactly as an admin's release does (resume
// event through the outbox, an await_resolved feed event), unless it is no
// longer pending, which is no error: the job may run twice, or after the
// review finished.
func (p *Parked) Expire(ctx context.Context, outboxID string) error {
	if !models.IsID(outboxID) {
		return apperr.Invalidf("await expiry id %q is not a UUID", outboxID)
	}
	var row models.Outbox
	err := p.store.DB.WithContext(ctx).Where("id = ?", outboxID).Take(&row).Error
	if err := store.NotFound(err, "review: load await expiry", "await expiry "+outboxID); err != nil {
		return err
	}
	var ex AwaitExpiryPayload
	if row.Kind != outbox.KindAwaitExpiry || row.Payload.Decode(&ex) != nil {
		return apperr.Invalidf("outbox row %s is not an await expiry", outboxID)
	}
	var released bool
	err = p.store.Tx(ctx, func(tx *gorm.DB) error {
		tx = tx.WithContext(ctx)
		aw, task, ok, err := ReleaseAwait(ctx, tx, ex.WorkspaceID, ex.AwaitID, ExpiryActor, ReasonExpired)
		if err != nil || !ok {
			return err
		}
		released = true
		detail := map[string]any{"await_id": aw.ID, "task_id": task.ID, "step_id": aw.CorrelationKey, "reason": ReasonExpired}
		return recordSettled(tx, aw, models.FeedAwaitResolved, ReasonExpired, ExpiryActor, detail)
	})
	if apperr.Is(err, apperr.NotFound) {
		return nil // the task was deleted: nothing is left to expire
	}
	if err != nil {
		return err
	}
	if released && p.afterRelease != nil {
		p.afterRelease(ctx)
	}
	return nil
}

// ClaimScheduler schedules each review claim's expiry job on the events
// queue, at the claim's expiry (Queue's AfterClaimFunc). It enqueues from
// a goroutine of its own, so a claim's reply does not wait for Redis.
type ClaimScheduler struct {
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

// NewClaimScheduler returns a ClaimScheduler enqueueing on queue through
// rdb; Close stops it.
func NewClaimScheduler(rdb *redis.Client, queue string, log *slog.Logger) *ClaimScheduler {
	s := &ClaimScheduler{client: asynq.NewClientFromRedisClient(rdb), queue: queue, log: log,
		pending: make(chan ReviewClaim, claimBacklog), stop: make(chan struct{}), done: make(chan struct{})}
	go s.run()
	return s
}

// ClaimExpiryTaskID is the job id of the expiry of the claim on taskID that
// expires at expiresAt: one job per claim.
func ClaimExpiryTaskID(taskID string, expiresAt time.Time) string {
	return fmt.Sprintf("claim_expiry:%s:%d", taskID, expiresAt.UnixMicro())
}

// Schedule hands c's expiry job to the scheduler and returns at once. A
// job that cannot be enqueued is logged, not returned: the queue treats a
// claim past its time as free whether or not the job runs.
func (s *ClaimScheduler) Schedule(ctx context.Context, c ReviewClaim) {
	select {
	case s.pending <- c:
	default:
		s.log.WarnContext(ctx, "review: claim expiry backlog full; the claim still ends at its time", "task_id", c.TaskID)
	}
}

// run enqueues the handed claims' jobs until Close, then those still
// pending.
func (s *ClaimScheduler) run() {
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

func (s *ClaimScheduler) enqueue(c ReviewClaim) {
	ctx, cancel := context.WithTimeout(context.Background(), enqueueTimeout)
	defer cancel()
	task, opts, err := claimExpiryJob(c.TaskID, c.ClaimExpiresAt, s.queue)
	if err == nil {
		_, err = s.client.EnqueueContext(ctx, task, opts...)
	}
	if err != nil && !errors.Is(err, asynq.ErrTaskIDConflict) {
		s.log.Warn("review: schedule claim expiry; the claim still ends at its time", "task_id", c.TaskID, "error", err.Error())
	}
}

// Close enqueues the claims already handed over, then releases the
// scheduler's client (not the Redis client it shares). Schedule after
// Close does nothing that lasts.
func (s *ClaimScheduler) Close() {
	select {
	case <-s.stop:
	default:
		close(s.stop)
	}
	<-s.done
	_ = s.client.Close()
}

// claimExpiryJob is the expiry job of the claim on taskID that expires at
// expiresAt, on queue.
func claimExpiryJob(taskID string, expiresAt time.Time, queue string) (*asynq.Task, []asynq.Option, error) {
	task, err := jobs.NewTask(jobs.ClaimExpiry{TaskID: taskID, ExpiresAt: expiresAt})
	if err != nil {
		return nil, nil, err
	}
	return task, []asynq.Option{asynq.TaskID(ClaimExpiryTaskID(taskID, expiresAt)), asynq.Queue(queue),
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
		return nil, fmt.Errorf("review: select expired claims: %w", err)
	}
	owed := make([]jobs.Owed, 0, len(tasks))
	for _, t := range tasks {
		task, opts, err := claimExpiryJob(t.ID, *t.ClaimExpiresAt, queue)
		if err != nil {
			return nil, err
		}
		owed = append(owed, jobs.Owed{ID: ClaimExpiryTaskID(t.ID, *t.ClaimExpiresAt), Due: *t.ClaimExpiresAt, Task: task, Opts: opts})
	}
	return owed, nil
}
