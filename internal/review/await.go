// Package review holds what parks and resumes tasks: awaits and their
// release, resume events and their delivery, and the key-detail summary pass.
package review

import (
	"context"
	"errors"
	"fmt"
	"time"

	"gorm.io/gorm"

	"github.com/appruntime/appruntime/internal/outbox"
	"github.com/appruntime/appruntime/internal/session"
	"github.com/appruntime/appruntime/models"
)

// ResumePayload is the resume event: the outbox row's payload, the body of the
// webhook and the feed's task_resumed record.
type ResumePayload struct {
	Type        string    `json:"type"` // "task.resumed"
	TaskID      string    `json:"task_id"`
	AgentID     string    `json:"agent_id"`
	WorkspaceID string    `json:"workspace_id"`
	StepID      string    `json:"step_id"`
	AwaitID     string    `json:"await_id"`
	ResolvedBy  string    `json:"resolved_by"`
	ResolvedAt  time.Time `json:"resolved_at"`
	Reason      string    `json:"reason"`           // "action", "admin_release", "expired"
	Action      string    `json:"action,omitempty"` // the action that released it
}

// ResumeEventType is the type of a resume event.
const ResumeEventType = "task.resumed"

// ResolveSessionAwait releases the await of the session's own step, located
// from the verified claims only (task, source app_tool, correlation key = the
// step id), inside tx. It writes the resume event to the outbox in the same
// transaction. Of many concurrent callers exactly one gets resolved = true;
// a step with no await, or one already released, gives resolved = false.
func ResolveSessionAwait(ctx context.Context, tx *gorm.DB, c session.Claims, actor, action string) (awaitID string, resolved bool, err error) {
	var aw models.TaskAwait
	err = tx.WithContext(ctx).
		Where("task_id = ? AND source_type = ? AND correlation_key = ?", c.TaskID, models.AwaitSourceAppTool, c.StepID).
		Take(&aw).Error
	if errors.Is(err, gorm.ErrRecordNotFound) {
		return "", false, nil
	}
	if err != nil {
		return "", false, fmt.Errorf("review: find await: %w", err)
	}
	ok, err := release(ctx, tx, aw, ResumePayload{
		TaskID: c.TaskID, AgentID: c.AgentID, WorkspaceID: c.WorkspaceID, StepID: c.StepID,
		ResolvedBy: actor, Reason: "action", Action: action,
	})
	return aw.ID, ok, err
}

// release flips a pending await to resolved (a conditional update, so one
// caller wins a race) and, when it did, queues the resume event.
func release(ctx context.Context, tx *gorm.DB, aw models.TaskAwait, p ResumePayload) (bool, error) {
	now := time.Now().UTC()
	res := tx.WithContext(ctx).Model(&models.TaskAwait{}).
		Where("id = ? AND status = ?", aw.ID, models.AwaitPending).
		Updates(map[string]any{"status": models.AwaitResolved, "resolved_at": now, "resolved_by": p.ResolvedBy, "reason": p.Reason})
	if res.Error != nil {
		return false, fmt.Errorf("review: release await: %w", res.Error)
	}
	if res.RowsAffected == 0 {
		return false, nil
	}
	p.Type, p.AwaitID, p.ResolvedAt = ResumeEventType, aw.ID, now
	if _, err := outbox.Add(tx.WithContext(ctx), outbox.KindResumeEvent, p); err != nil {
		return false, err
	}
	return true, nil
}
