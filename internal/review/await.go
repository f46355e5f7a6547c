package review

import (
	"context"
	"errors"
	"fmt"
	"time"

	"gorm.io/gorm"
	"gorm.io/gorm/clause"

	"github.com/appruntime/appruntime/internal/apperr"
	"github.com/appruntime/appruntime/internal/claim"
	"github.com/appruntime/appruntime/internal/outbox"
	"github.com/appruntime/appruntime/internal/session"
	"github.com/appruntime/appruntime/internal/webhook"
	"github.com/appruntime/appruntime/models"
)

// ResumePayload is a webhook event (webhook.Event): the outbox row's
// payload, the body of the webhook and, for the types that resume a task,
// the feed's task_resumed record.
type ResumePayload = webhook.Event

// ResumeEventType is the type of the event of an await a reviewer's action
// (or a card's answer) released.
const ResumeEventType = webhook.TaskResumed

// AbortEventType is the type of the event that tells an agent an admin
// aborted its parked task: delivered like a resume event (webhook, and the
// feed's await_aborted event on the pull endpoint), but nothing resumes.
const AbortEventType = webhook.TaskAborted

// eventTypeOf is the type of the event of an await released for reason:
// an admin's release is task.released, an expiry task.expired, anything
// else (an action, a card's answer) task.resumed
// (docs/agent-platforms.md#webhook-event-catalogue).
func eventTypeOf(reason string) string {
	switch reason {
	case ReasonAdminRelease:
		return webhook.TaskReleased
	case ReasonExpired:
		return webhook.TaskExpired
	}
	return ResumeEventType
}

// SettledError is the 409 of a write or an action on a step whose await is
// no longer pending, resolved or aborted (docs/architecture.md#7-one-approval): its
// sessions may still read, but no longer write or act.
func SettledError() error {
	return apperr.Conflictf("the review of this step is settled: its sessions may still read, but no longer write or act")
}

// LockSessionAwait locks the await of the session's own step inside tx
// until tx ends (SELECT … FOR UPDATE on Postgres; on SQLite the transaction
// holds the database's write lock already) and refuses with SettledError
// one that is no longer pending. An action that resolves an await takes
// this lock before its data-source transaction and holds it until its
// platform transaction commits, so of racing approvals the first writes and
// releases, and the others wait, then find the await settled and write
// nothing: one approval, one set of writes. A step that never parked has no
// await, and passes.
func LockSessionAwait(ctx context.Context, tx *gorm.DB, c session.Claims) error {
	var aw models.TaskAwait
	res := tx.WithContext(ctx).Clauses(clause.Locking{Strength: "UPDATE"}).
		Where("task_id = ? AND source_type = ? AND correlation_key = ?", c.TaskID, models.AwaitSourceAppTool, c.StepID).
		Limit(1).Find(&aw)
	if res.Error != nil {
		return fmt.Errorf("review: lock await: %w", res.Error)
	}
	if res.RowsAffected > 0 && aw.Status != models.AwaitPending {
		return SettledError()
	}
	return nil
}

// ResolveSessionAwait releases the await of the session's own step, located
// from the verified claims only (task, source app_tool, correlation key = the
// step id), inside tx. It writes the resume event to the outbox in the same
// transaction. Of many concurrent callers exactly one gets resolved = true;
// a step with no await, or one already released, gives resolved = false.
func ResolveSessionAwait(ctx context.Context, tx *gorm.DB, c session.Claims, actor, action string) (awaitID string, resolved bool, err error) {
	return ResolveSessionAwaitDecided(ctx, tx, c, actor, action, nil)
}

// ResolveSessionAwaitDecided is ResolveSessionAwait whose resume event
// carries decision (the action's outcome, reason and writes); its
// decided_by and decided_at are filled here, as the await's.
func ResolveSessionAwaitDecided(ctx context.Context, tx *gorm.DB, c session.Claims, actor, action string, decision *webhook.Decision) (awaitID string, resolved bool, err error) {
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
		ResolvedBy: actor, Reason: "action", Action: action, Decision: decision,
	})
	return aw.ID, ok, err
}

// ReleaseAwait releases the await awaitID of a task of workspaceID on behalf
// of actor, inside tx, and writes the same resume event an action does, with
// reason ("admin_release", "expired") in place of an action's name. An await
// of another workspace is not found. Of many concurrent callers exactly one
// gets released = true; an await that is no longer pending gives false.
func ReleaseAwait(ctx context.Context, tx *gorm.DB, workspaceID, awaitID, actor, reason string) (aw models.TaskAwait, task models.Task, released bool, err error) {
	return ReleaseAwaitNoted(ctx, tx, workspaceID, awaitID, actor, reason, "")
}

// ReleaseAwaitNoted is ReleaseAwait whose event carries note, the admin's
// reason for the release.
func ReleaseAwaitNoted(ctx context.Context, tx *gorm.DB, workspaceID, awaitID, actor, reason, note string) (aw models.TaskAwait, task models.Task, released bool, err error) {
	aw, task, err = findAwait(ctx, tx, workspaceID, awaitID)
	if err != nil {
		return aw, task, false, err
	}
	released, err = release(ctx, tx, aw, ResumePayload{
		TaskID: task.ID, AgentID: task.AgentID, WorkspaceID: task.WorkspaceID, StepID: aw.CorrelationKey,
		ResolvedBy: actor, Reason: reason, Note: note,
	})
	return aw, task, released, err
}

// findAwait loads an await and its task, refusing with one 404 an await of
// another workspace, so other workspaces' awaits cannot be probed.
func findAwait(ctx context.Context, db *gorm.DB, workspaceID, awaitID string) (models.TaskAwait, models.Task, error) {
	var aw models.TaskAwait
	var task models.Task
	notFound := apperr.NotFoundf("await %s not found", awaitID)
	if !models.IsID(awaitID) {
		return aw, task, notFound
	}
	db = db.WithContext(ctx)
	err := db.Where("id = ?", awaitID).Take(&aw).Error
	if errors.Is(err, gorm.ErrRecordNotFound) {
		return aw, task, notFound
	}
	if err != nil {
		return aw, task, fmt.Errorf("review: find await: %w", err)
	}
	err = db.Where("id = ? AND workspace_id = ?", aw.TaskID, workspaceID).Take(&task).Error
	if errors.Is(err, gorm.ErrRecordNotFound) {
		return aw, task, notFound
	}
	if err != nil {
		return aw, task, fmt.Errorf("review: find task of await: %w", err)
	}
	return aw, task, nil
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
	if err := claim.Release(tx.WithContext(ctx), aw.TaskID); err != nil {
		return false, err
	}
	p.Type, p.AwaitID, p.ResolvedAt = eventTypeOf(p.Reason), aw.ID, now
	if p.Decision != nil {
		p.Decision.DecidedBy, p.Decision.DecidedAt = p.ResolvedBy, now
		if p.Decision.Writes == nil {
			p.Decision.Writes = []webhook.Write{}
		}
	}
	if _, err := outbox.Add(tx.WithContext(ctx), outbox.KindResumeEvent, p); err != nil {
		return false, err
	}
	return true, nil
}
