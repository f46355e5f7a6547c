package review

import (
	"context"
	"errors"
	"fmt"

	"github.com/hibiken/asynq"
	"gorm.io/gorm"

	"github.com/appruntime/appruntime/internal/apperr"
	"github.com/appruntime/appruntime/internal/audit"
	"github.com/appruntime/appruntime/internal/requestid"
	"github.com/appruntime/appruntime/jobs"
	"github.com/appruntime/appruntime/models"
)

// MaxDeliveriesListed bounds one listing of webhook delivery attempts.
const MaxDeliveriesListed = 200

// DeliveryFilter narrows a listing of delivery attempts to one agent or one
// task of the workspace; both empty lists the workspace's.
type DeliveryFilter struct {
	AgentID, TaskID string
}

// Deliveries returns the workspace's webhook delivery attempts (every one:
// its status, latency and error), newest first, at most MaxDeliveriesListed.
func Deliveries(ctx context.Context, db *gorm.DB, workspaceID string, f DeliveryFilter) ([]models.WebhookDelivery, error) {
	q := db.WithContext(ctx).
		Where("agent_id IN (SELECT id FROM agents WHERE workspace_id = ?)", workspaceID).
		Order("created_at DESC, attempt DESC").Limit(MaxDeliveriesListed)
	if f.AgentID != "" {
		q = q.Where("agent_id = ?", f.AgentID)
	}
	if f.TaskID != "" {
		q = q.Where("task_id = ?", f.TaskID)
	}
	var out []models.WebhookDelivery
	if err := q.Find(&out).Error; err != nil {
		return nil, fmt.Errorf("review: list webhook deliveries: %w", err)
	}
	return out, nil
}

// Redeliver enqueues one more delivery of resume event eventID of the
// workspace (after its receiver was fixed, say), audited as
// "webhook.redeliver". An event already delivered (a 2xx attempt) is a 409:
// receivers dedupe on the event id, and a delivered event is not sent again.
func (r *Resumer) Redeliver(ctx context.Context, workspaceID, actor, eventID string) error {
	if !models.IsID(eventID) {
		return apperr.NotFoundf("no webhook event %q", eventID)
	}
	db := r.store.DB.WithContext(ctx)
	var prior []models.WebhookDelivery
	err := db.Where("event_id = ? AND agent_id IN (SELECT id FROM agents WHERE workspace_id = ?)", eventID, workspaceID).
		Order("attempt").Find(&prior).Error
	if err != nil {
		return fmt.Errorf("review: load deliveries of %s: %w", eventID, err)
	}
	if len(prior) == 0 {
		return apperr.NotFoundf("no webhook event %s in this workspace", eventID)
	}
	for _, d := range prior {
		if d.StatusCode >= 200 && d.StatusCode < 300 {
			return apperr.Conflictf("event %s was delivered (attempt %d answered %d)", eventID, d.Attempt, d.StatusCode)
		}
	}
	task, err := requestid.NewTask(ctx, jobs.WebhookDelivery{EventID: eventID})
	if err != nil {
		return err
	}
	// A task id of its own: the first delivery's job may still be retained
	// (or retrying) under WebhookTaskID.
	_, err = r.jobs.EnqueueContext(ctx, task,
		asynq.TaskID(WebhookTaskID(eventID)+":redeliver:"+models.NewID()), asynq.Queue(r.queue),
		asynq.MaxRetry(WebhookMaxRetry), asynq.Retention(jobs.Retention), asynq.Timeout(jobs.EventsDeadline))
	if err != nil && !errors.Is(err, asynq.ErrTaskIDConflict) {
		return fmt.Errorf("review: enqueue redelivery of %s: %w", eventID, err)
	}
	return r.store.Tx(ctx, func(tx *gorm.DB) error {
		return audit.Record(ctx, tx, audit.Entry{WorkspaceID: workspaceID, Actor: actor, Action: "webhook.redeliver",
			TargetType: "webhook_event", TargetID: eventID, Detail: map[string]any{"task_id": prior[0].TaskID, "attempts": len(prior)}})
	})
}

// Deliveries lists the workspace's delivery attempts (the package function
// Deliveries on the Resumer's store).
func (r *Resumer) Deliveries(ctx context.Context, workspaceID string, f DeliveryFilter) ([]models.WebhookDelivery, error) {
	return Deliveries(ctx, r.store.DB, workspaceID, f)
}
