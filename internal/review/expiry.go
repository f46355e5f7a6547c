package review

import (
	"context"
	"time"

	"gorm.io/gorm"

	"github.com/appruntime/appruntime/internal/apperr"
	"github.com/appruntime/appruntime/internal/outbox"
	"github.com/appruntime/appruntime/internal/store"
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
