package review

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/hibiken/asynq"
	"gorm.io/gorm"

	"github.com/appruntime/appruntime/internal/apperr"
	"github.com/appruntime/appruntime/internal/audit"
	"github.com/appruntime/appruntime/internal/requestid"
	"github.com/appruntime/appruntime/internal/webhook"
	"github.com/appruntime/appruntime/jobs"
	"github.com/appruntime/appruntime/models"
)

// DeliveriesPerPage is how many delivery attempts one page of a listing
// holds.
const DeliveriesPerPage = 50

// The outcomes a listing of delivery attempts can keep.
const (
	DeliveryDelivered  = "delivered"  // the receiver answered 2xx
	DeliveryFailed     = "failed"     // finished without a 2xx answer
	DeliveryUnfinished = "unfinished" // recorded, outcome unknown: in flight, or its worker stopped
)

// DeliveryStatuses are the outcomes a DeliveryFilter's Status may name.
var DeliveryStatuses = []string{DeliveryDelivered, DeliveryFailed, DeliveryUnfinished}

// EventTypes are the types of the events a delivery carries: the webhook
// event catalogue (docs/agent-platforms.md#webhook-event-catalogue).
var EventTypes = webhook.EventTypeNames()

// DeliveryFilter narrows a listing of delivery attempts; its zero value
// lists the workspace's first page.
type DeliveryFilter struct {
	// AgentID and TaskID keep one agent's or one task's attempts.
	AgentID, TaskID string
	// EventType keeps the attempts of one of EventTypes, as each attempt
	// recorded it (migration 0017; attempts made before it took the type of
	// their outbox row while it was kept).
	EventType string
	// Status keeps one of DeliveryStatuses.
	Status string
	Page   int // 1-based; 0 is the first page
}

// Delivery is one delivery attempt as an admin reads it: the attempt (with
// the type of the event it carried) and its agent's name.
type Delivery struct {
	models.WebhookDelivery
	AgentName string
}

// DeliveryPage is one page of delivery attempts, newest first.
type DeliveryPage struct {
	Deliveries []Delivery
	Page       int
	HasMore    bool
}

// Deliveries returns a page of the workspace's webhook delivery attempts
// that f keeps (every one: its status, latency and error), newest first.
func Deliveries(ctx context.Context, db *gorm.DB, workspaceID string, f DeliveryFilter) (DeliveryPage, error) {
	if f.Status != "" && !slices.Contains(DeliveryStatuses, f.Status) {
		return DeliveryPage{}, apperr.Invalidf("status %q must be one of %s", f.Status, strings.Join(DeliveryStatuses, ", "))
	}
	if f.EventType != "" && !slices.Contains(EventTypes, f.EventType) {
		return DeliveryPage{}, apperr.Invalidf("event %q must be one of %s", f.EventType, strings.Join(EventTypes, ", "))
	}
	for name, id := range map[string]string{"agent": f.AgentID, "task": f.TaskID} {
		if id != "" && !models.IsID(id) {
			return DeliveryPage{}, apperr.Invalidf("%s %q is not an id", name, id)
		}
	}
	page := max(f.Page, 1)
	db = db.WithContext(ctx)
	q := db.Where("agent_id IN (SELECT id FROM agents WHERE workspace_id = ?)", workspaceID)
	if f.AgentID != "" {
		q = q.Where("agent_id = ?", f.AgentID)
	}
	if f.TaskID != "" {
		q = q.Where("task_id = ?", f.TaskID)
	}
	switch f.Status {
	case DeliveryDelivered:
		q = q.Where("status_code BETWEEN 200 AND 299")
	case DeliveryFailed:
		q = q.Where("finished_at IS NOT NULL AND NOT (status_code BETWEEN 200 AND 299)")
	case DeliveryUnfinished:
		q = q.Where("finished_at IS NULL")
	}
	if f.EventType != "" {
		q = q.Where("event_type = ?", f.EventType)
	}
	var rows []models.WebhookDelivery
	err := q.Order("created_at DESC, attempt DESC, id DESC").
		Offset((page - 1) * DeliveriesPerPage).Limit(DeliveriesPerPage + 1).Find(&rows).Error
	if err != nil {
		return DeliveryPage{}, fmt.Errorf("review: list webhook deliveries: %w", err)
	}
	out := DeliveryPage{Page: page, HasMore: len(rows) > DeliveriesPerPage}
	rows = rows[:min(len(rows), DeliveriesPerPage)]
	names, err := agentNames(db, workspaceID, rows)
	if err != nil {
		return DeliveryPage{}, err
	}
	out.Deliveries = make([]Delivery, len(rows))
	for i, r := range rows {
		out.Deliveries[i] = Delivery{WebhookDelivery: r, AgentName: names[r.AgentID]}
	}
	return out, nil
}

// agentNames returns the workspace's agents' names (one query per page).
func agentNames(db *gorm.DB, workspaceID string, rows []models.WebhookDelivery) (map[string]string, error) {
	names := map[string]string{}
	if len(rows) == 0 {
		return names, nil
	}
	var agents []models.Agent
	if err := db.Select("id", "name").Where("workspace_id = ?", workspaceID).Find(&agents).Error; err != nil {
		return nil, fmt.Errorf("review: agent names: %w", err)
	}
	for _, a := range agents {
		names[a.ID] = a.Name
	}
	return names, nil
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
func (r *Resumer) Deliveries(ctx context.Context, workspaceID string, f DeliveryFilter) (DeliveryPage, error) {
	return Deliveries(ctx, r.store.DB, workspaceID, f)
}
