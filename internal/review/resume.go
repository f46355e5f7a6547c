package review

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"time"

	"github.com/hibiken/asynq"
	"github.com/redis/go-redis/v9"
	"gorm.io/gorm"

	"github.com/appruntime/appruntime/internal/apperr"
	"github.com/appruntime/appruntime/internal/crypt"
	"github.com/appruntime/appruntime/internal/feed"
	"github.com/appruntime/appruntime/internal/metrics"
	"github.com/appruntime/appruntime/internal/outbox"
	"github.com/appruntime/appruntime/internal/requestid"
	"github.com/appruntime/appruntime/internal/store"
	"github.com/appruntime/appruntime/internal/webhook"
	"github.com/appruntime/appruntime/jobs"
	"github.com/appruntime/appruntime/models"
)

// ResumeEvent is an event as it leaves appruntime: the webhook body and,
// for the types that resume a task, the payload of the feed's task_resumed
// record. ID is the outbox row's id,
// the event's idempotency key for receivers.
type ResumeEvent struct {
	ID string `json:"id"`
	ResumePayload
}

// Resumer carries out released awaits' resume events (the resume_event and
// webhook_delivery jobs). Both of its handlers are idempotent on the outbox
// id, because a job may run twice.
type Resumer struct {
	store   *store.Store
	jobs    *asynq.Client
	queue   string
	secrets *crypt.Box
	client  *http.Client
	metrics *metrics.Metrics
	now     func() time.Time
	log     *slog.Logger
}

// ResumerOptions are what a Resumer is built from.
type ResumerOptions struct {
	Store *store.Store
	Redis redis.UniversalClient
	// Queue is the events queue the webhook deliveries are enqueued on.
	Queue string
	// Secrets opens agents' sealed webhook secrets (Config.SecretsKey).
	Secrets *crypt.Box
	// HTTPClient posts the webhooks; it must dial through the SSRF guard
	// (gateway.NewClient). Each attempt gets WebhookAttemptTimeout. The
	// Resumer uses a copy that never follows redirects.
	HTTPClient *http.Client
	// Metrics counts delivery attempts by outcome; nil counts nothing.
	Metrics *metrics.Metrics
	// NowFunc is the clock deliveries are timestamped and signed with; nil
	// is time.Now. Tests set it to make a delivery that is already old.
	NowFunc func() time.Time
	Log     *slog.Logger
}

// NewResumer returns a Resumer.
func NewResumer(o ResumerOptions) *Resumer {
	// A delivery is one signed POST to the configured URL. Following a
	// 301, 302 or 303 would turn it into a GET without the event, whose 2xx
	// would then be recorded as delivered; a redirect is instead answered as
	// the failed attempt it is (its 3xx recorded, the job retried).
	client := *o.HTTPClient
	client.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	if o.NowFunc == nil {
		o.NowFunc = time.Now
	}
	return &Resumer{
		store:   o.Store,
		jobs:    asynq.NewClientFromRedisClient(o.Redis),
		queue:   o.Queue,
		secrets: o.Secrets,
		client:  &client,
		metrics: o.Metrics,
		now:     o.NowFunc,
		log:     o.Log,
	}
}

// WebhookTaskID is the asynq task id of the webhook delivery of the resume
// event outboxID: enqueueing it twice is refused as a duplicate.
func WebhookTaskID(outboxID string) string { return "webhook:" + outboxID }

// HandleResume carries out the resume event of outbox row outboxID. In one
// transaction it puts the task back to running (only when it is
// waiting_for_input with no other pending await) and records a task_resumed
// feed event whose dedupe key is the outbox id, so a second run changes
// nothing. Then, when the agent has a resume webhook, it enqueues the
// delivery under WebhookTaskID.
//
// The enqueue happens after the commit, on every run, and its failure fails
// this job: asynq retries the resume job, whose transaction is then a no-op
// and whose enqueue is tried again, until the delivery job exists. So the
// delivery cannot be lost between the two, and it cannot be doubled.
func (r *Resumer) HandleResume(ctx context.Context, outboxID string) error {
	ev, err := r.loadEvent(ctx, outboxID)
	if err != nil {
		return err
	}
	var taskGone bool
	err = r.store.Tx(ctx, func(tx *gorm.DB) error {
		gone, err := isTaskGone(tx, ev.TaskID)
		if err != nil || gone {
			taskGone = gone
			return err
		}
		if !webhook.ResumesTask(ev.Type) {
			// an abort, or an event pushed from the feed, recorded its
			// own feed event; nothing resumes
			return nil
		}
		if err := resumeTask(tx, ev.TaskID); err != nil {
			return err
		}
		return recordResumed(tx, ev)
	})
	if err != nil {
		return err
	}
	if taskGone {
		r.log.InfoContext(ctx, "resume event dropped: the task was deleted", "event_id", outboxID, "task_id", ev.TaskID)
		return r.done(ctx, outboxID)
	}
	var agent models.Agent
	err = r.store.DB.WithContext(ctx).Select("id", "resume_webhook_url", "webhook_events").Where("id = ?", ev.AgentID).Take(&agent).Error
	if errors.Is(err, gorm.ErrRecordNotFound) {
		return r.done(ctx, outboxID) // the agent was deleted: nobody left to tell
	}
	if err != nil {
		return fmt.Errorf("review: load agent %s: %w", ev.AgentID, err)
	}
	if agent.ResumeWebhookURL == "" || !webhook.Subscribed(agent.WebhookEventList(), ev.Type) {
		// the platform pulls GET /api/agent/tasks/{id}/events instead, or
		// does not want this type pushed
		return r.done(ctx, outboxID)
	}
	// The event stays owed until its delivery settles (HandleWebhook).
	return r.enqueueWebhook(ctx, outboxID)
}

// done records that resume event outboxID owes nothing more: its webhook
// was delivered, gave up, or was not wanted.
func (r *Resumer) done(ctx context.Context, outboxID string) error {
	return outbox.MarkDone(context.WithoutCancel(ctx), r.store.DB, outboxID)
}

// loadEvent reads the resume event of outbox row id.
func (r *Resumer) loadEvent(ctx context.Context, id string) (ResumeEvent, error) {
	if !models.IsID(id) {
		return ResumeEvent{}, apperr.Invalidf("resume event id %q is not a UUID", id)
	}
	var row models.Outbox
	err := r.store.DB.WithContext(ctx).Where("id = ?", id).Take(&row).Error
	if err := store.NotFound(err, "review: load resume event", "resume event "+id); err != nil {
		return ResumeEvent{}, err
	}
	if row.Kind != outbox.KindResumeEvent {
		return ResumeEvent{}, apperr.Invalidf("outbox row %s is a %s, not a resume event", id, row.Kind)
	}
	ev := ResumeEvent{ID: id}
	if err := row.Payload.Decode(&ev.ResumePayload); err != nil {
		return ResumeEvent{}, apperr.Invalidf("resume event %s has a malformed payload: %v", id, err)
	}
	return ev, nil
}

// isTaskGone reports whether the task was deleted since its await was
// released; its resume event then has nothing left to resume or record.
func isTaskGone(db *gorm.DB, taskID string) (bool, error) {
	var n int64
	if err := db.Model(&models.Task{}).Where("id = ?", taskID).Count(&n).Error; err != nil {
		return false, fmt.Errorf("review: find task %s: %w", taskID, err)
	}
	return n == 0, nil
}

// resumeTask puts a parked task back to running, unless another await still
// holds it (or it has already moved on: running, completed, failed).
func resumeTask(tx *gorm.DB, taskID string) error {
	err := tx.Model(&models.Task{}).
		Where("id = ? AND status = ?", taskID, models.TaskWaitingForInput).
		Where("NOT EXISTS (SELECT 1 FROM task_awaits WHERE task_awaits.task_id = tasks.id AND task_awaits.status = ?)", models.AwaitPending).
		Updates(map[string]any{"status": models.TaskRunning, "updated_at": time.Now().UTC()}).Error
	if err != nil {
		return fmt.Errorf("review: resume task %s: %w", taskID, err)
	}
	return nil
}

// recordResumed writes the task_resumed feed event once per resume event:
// the dedupe key makes a second insert do nothing.
func recordResumed(tx *gorm.DB, ev ResumeEvent) error {
	key := ev.ID
	row := models.FeedEvent{
		TaskID: ev.TaskID, Type: models.FeedTaskResumed, Name: ev.Action,
		Payload: models.MustJSON(ev), Actor: ev.ResolvedBy, DedupeKey: &key,
	}
	if row.Actor == "" {
		row.Actor = "system"
	}
	if ev.StepID != "" {
		row.StepID = &ev.StepID
	}
	if err := feed.Insert(tx.Statement.Context, tx, true, row); err != nil {
		return fmt.Errorf("review: record task_resumed: %w", err)
	}
	return nil
}

// enqueueWebhook enqueues the delivery job of resume event outboxID; one
// already enqueued (or finished and retained) counts as done. A delivery
// that already failed is due at the next attempt its last one recorded, so
// one re-created after Redis lost its retry keeps its schedule.
func (r *Resumer) enqueueWebhook(ctx context.Context, outboxID string) error {
	// The delivery carries the request id the resume job ran with.
	task, err := requestid.NewTask(ctx, jobs.WebhookDelivery{EventID: outboxID})
	if err != nil {
		return err
	}
	var last []models.WebhookDelivery
	err = r.store.DB.WithContext(ctx).Select("next_attempt_at").Where("event_id = ?", outboxID).
		Order("attempt DESC").Limit(1).Find(&last).Error
	if err != nil {
		return fmt.Errorf("review: load last delivery of %s: %w", outboxID, err)
	}
	opts := []asynq.Option{asynq.TaskID(WebhookTaskID(outboxID)), asynq.Queue(r.queue),
		asynq.MaxRetry(WebhookMaxRetry), asynq.Retention(jobs.Retention), asynq.Timeout(jobs.EventsDeadline)}
	if len(last) == 1 && last[0].NextAttemptAt != nil {
		opts = append(opts, asynq.ProcessAt(*last[0].NextAttemptAt))
	}
	_, err = r.jobs.EnqueueContext(ctx, task, opts...)
	if err != nil && !errors.Is(err, asynq.ErrTaskIDConflict) {
		return fmt.Errorf("review: enqueue webhook for %s: %w", outboxID, err)
	}
	return nil
}
