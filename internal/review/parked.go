package review

import (
	"context"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"gorm.io/gorm"

	"github.com/appruntime/appruntime/internal/apperr"
	"github.com/appruntime/appruntime/internal/audit"
	"github.com/appruntime/appruntime/internal/claim"
	"github.com/appruntime/appruntime/internal/feed"
	"github.com/appruntime/appruntime/internal/outbox"
	"github.com/appruntime/appruntime/internal/store"
	"github.com/appruntime/appruntime/models"
)

// Reasons recorded on an await that an admin settled instead of an action.
const (
	ReasonAdminRelease = "admin_release"
	ReasonAdminAbort   = "admin_abort"
)

// Audit actions of an admin settling a parked task.
const (
	AuditAwaitRelease = "await.release"
	AuditAwaitAbort   = "await.abort"
)

// MaxAbortNoteLength bounds the reason an admin must give when releasing or
// aborting, which the feed and the audit log keep.
const MaxAbortNoteLength = 1000

// checkNote trims an admin's reason for settling a parked task: it is
// required, and at most MaxAbortNoteLength characters.
func checkNote(note string) (string, error) {
	note = strings.TrimSpace(note)
	if note == "" {
		return "", apperr.Invalidf("a reason is required")
	}
	if utf8.RuneCountInString(note) > MaxAbortNoteLength {
		return "", apperr.Invalidf("the reason is longer than %d characters", MaxAbortNoteLength)
	}
	return note, nil
}

// Parked lets an admin settle a parked task that nobody will finish
// (docs/architecture.md#3-parked-tasks-are-seen): release its pending await, which resumes the
// agent exactly as an action with resolves_await would, or abort it, which
// fails the task and resumes nothing. Both are audited in the transaction of
// the change. It is safe for concurrent use.
type Parked struct {
	store *store.Store
	// afterRelease runs after a release committed (it wakes the outbox
	// relay, so that the resume event leaves at once); nil does nothing.
	afterRelease func(ctx context.Context)
}

// NewParked returns a Parked on st; afterRelease, when not nil, runs after
// every committed release.
func NewParked(st *store.Store, afterRelease func(ctx context.Context)) *Parked {
	return &Parked{store: st, afterRelease: afterRelease}
}

// Release releases the pending await awaitID of a task of workspaceID on
// behalf of actor, for the reason note (required, 400 without): the await
// is resolved with reason admin_release, the resume event is written to the
// outbox, the feed records an await_resolved event with the note, and the
// audit log an await.release entry with it, all in one transaction. An
// await of another workspace is a 404; one that is no longer pending is a
// 409 naming its state.
func (p *Parked) Release(ctx context.Context, workspaceID, awaitID, actor, note string) (models.TaskAwait, error) {
	note, err := checkNote(note)
	if err != nil {
		return models.TaskAwait{}, err
	}
	var aw models.TaskAwait
	err = p.store.Tx(ctx, func(tx *gorm.DB) error {
		tx = tx.WithContext(ctx)
		found, task, released, err := ReleaseAwaitNoted(ctx, tx, workspaceID, awaitID, actor, ReasonAdminRelease, note)
		if err != nil {
			return err
		}
		if !released {
			// found was read before a concurrent settle committed: name
			// the state that refused this release, not the stale one.
			if err := tx.Where("id = ?", found.ID).Take(&found).Error; err != nil {
				return fmt.Errorf("review: reload await: %w", err)
			}
			return notPending(found)
		}
		aw = found
		detail := map[string]any{"await_id": aw.ID, "task_id": task.ID, "step_id": aw.CorrelationKey, "reason": ReasonAdminRelease, "note": note}
		if err := recordSettled(tx, aw, models.FeedAwaitResolved, ReasonAdminRelease, actor, detail); err != nil {
			return err
		}
		return audit.Record(ctx, tx, audit.Entry{
			WorkspaceID: workspaceID, Actor: actor, Action: AuditAwaitRelease, TargetType: "await", TargetID: aw.ID, Detail: detail,
		})
	})
	if err != nil {
		return models.TaskAwait{}, err
	}
	if p.afterRelease != nil {
		p.afterRelease(ctx)
	}
	return p.reload(ctx, aw.ID)
}

// Abort aborts the pending await awaitID of a task of workspaceID on behalf
// of actor, for the reason note (required, 400 without): the await becomes
// aborted, the task failed, the feed records an await_aborted event with the
// note, the audit log an await.abort entry, and the outbox a task.aborted
// event for the agent (webhook and pull endpoint), all in one transaction.
// The agent is not resumed. An await of another workspace is a 404; one that
// is no longer pending is a 409 naming its state.
func (p *Parked) Abort(ctx context.Context, workspaceID, awaitID, actor, note string) (models.TaskAwait, error) {
	note, err := checkNote(note)
	if err != nil {
		return models.TaskAwait{}, err
	}
	var aw models.TaskAwait
	err = p.store.Tx(ctx, func(tx *gorm.DB) error {
		tx = tx.WithContext(ctx)
		found, task, err := findAwait(ctx, tx, workspaceID, awaitID)
		if err != nil {
			return err
		}
		now := time.Now().UTC()
		res := tx.Model(&models.TaskAwait{}).Where("id = ? AND status = ?", found.ID, models.AwaitPending).
			Updates(map[string]any{"status": models.AwaitAborted, "resolved_at": now, "resolved_by": actor, "reason": ReasonAdminAbort})
		if res.Error != nil {
			return fmt.Errorf("review: abort await: %w", res.Error)
		}
		if res.RowsAffected == 0 {
			if err := tx.Where("id = ?", found.ID).Take(&found).Error; err != nil {
				return fmt.Errorf("review: reload await: %w", err)
			}
			return notPending(found)
		}
		err = tx.Model(&models.Task{}).
			Where("id = ? AND status NOT IN ?", task.ID, []string{models.TaskCompleted, models.TaskFailed}).
			Updates(map[string]any{"status": models.TaskFailed, "updated_at": now}).Error
		if err != nil {
			return fmt.Errorf("review: fail task %s: %w", task.ID, err)
		}
		if err := claim.Release(tx, task.ID); err != nil {
			return err
		}
		aw = found
		detail := map[string]any{"await_id": aw.ID, "task_id": task.ID, "step_id": aw.CorrelationKey, "reason": ReasonAdminAbort, "note": note}
		if err := recordSettled(tx, aw, models.FeedAwaitAborted, ReasonAdminAbort, actor, detail); err != nil {
			return err
		}
		// The agent is told, through the outbox like a release, but its
		// task is not resumed: the event's type says it was aborted.
		_, err = outbox.Add(tx, outbox.KindResumeEvent, ResumePayload{
			Type: AbortEventType, TaskID: task.ID, AgentID: task.AgentID, WorkspaceID: task.WorkspaceID,
			StepID: aw.CorrelationKey, AwaitID: aw.ID, ResolvedBy: actor, ResolvedAt: now, Reason: ReasonAdminAbort, Note: note,
		})
		if err != nil {
			return err
		}
		return audit.Record(ctx, tx, audit.Entry{
			WorkspaceID: workspaceID, Actor: actor, Action: AuditAwaitAbort, TargetType: "await", TargetID: aw.ID, Detail: detail,
		})
	})
	if err != nil {
		return models.TaskAwait{}, err
	}
	if p.afterRelease != nil {
		p.afterRelease(ctx)
	}
	return p.reload(ctx, aw.ID)
}

// notPending is the 409 of settling an await that is already settled.
func notPending(aw models.TaskAwait) error {
	return apperr.Conflictf("await %s is already %s, not pending", aw.ID, aw.Status)
}

// recordSettled writes the feed event of an admin's release or abort.
func recordSettled(tx *gorm.DB, aw models.TaskAwait, feedType, name, actor string, payload map[string]any) error {
	row := models.FeedEvent{TaskID: aw.TaskID, Type: feedType, Name: name, Payload: models.MustJSON(payload), Actor: actor}
	if aw.SourceType == models.AwaitSourceAppTool && aw.CorrelationKey != "" {
		step := aw.CorrelationKey
		row.StepID = &step
	}
	if err := feed.Insert(tx.Statement.Context, tx, false, row); err != nil {
		return fmt.Errorf("review: record %s: %w", feedType, err)
	}
	return nil
}

// reload reads an await as committed.
func (p *Parked) reload(ctx context.Context, id string) (models.TaskAwait, error) {
	var aw models.TaskAwait
	if err := p.store.DB.WithContext(ctx).Where("id = ?", id).Take(&aw).Error; err != nil {
		return aw, fmt.Errorf("review: reload await %s: %w", id, err)
	}
	return aw, nil
}

// ParkedByAgent is how many of an agent's tasks are parked on a pending
// await, and since when the oldest has waited.
type ParkedByAgent struct {
	AgentID, AgentName string
	Tasks              int
	OldestSince        time.Time
}

// ParkedStats returns, per agent of the workspace with parked tasks, the
// number of its tasks waiting on a pending await and the oldest such
// await's creation, oldest first: the overview's "who is waiting, and for
// how long".
func ParkedStats(ctx context.Context, db *gorm.DB, workspaceID string) ([]ParkedByAgent, error) {
	var rows []struct {
		AgentID, AgentName string
		Tasks              int
		OldestSince        models.Timestamp // min(): text on SQLite
	}
	err := db.WithContext(ctx).Raw(`SELECT t.agent_id AS agent_id, a.name AS agent_name,
			count(DISTINCT t.id) AS tasks, min(aw.created_at) AS oldest_since
		FROM task_awaits aw JOIN tasks t ON t.id = aw.task_id JOIN agents a ON a.id = t.agent_id
		WHERE t.workspace_id = ? AND aw.status = ?
		GROUP BY t.agent_id, a.name ORDER BY oldest_since, agent_name`, workspaceID, models.AwaitPending).Scan(&rows).Error
	if err != nil {
		return nil, fmt.Errorf("review: parked stats: %w", err)
	}
	out := make([]ParkedByAgent, len(rows))
	for i, r := range rows {
		out[i] = ParkedByAgent{AgentID: r.AgentID, AgentName: r.AgentName, Tasks: r.Tasks, OldestSince: r.OldestSince.Time}
	}
	return out, nil
}

// Stats is ParkedStats on p's store.
func (p *Parked) Stats(ctx context.Context, workspaceID string) ([]ParkedByAgent, error) {
	return ParkedStats(ctx, p.store.DB, workspaceID)
}
