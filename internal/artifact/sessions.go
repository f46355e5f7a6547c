package artifact

import (
	"context"
	"fmt"
	"time"

	"github.com/appruntime/appruntime/internal/apperr"
	"github.com/appruntime/appruntime/internal/audit"
	"github.com/appruntime/appruntime/internal/store"
	"github.com/appruntime/appruntime/models"
)

// MaxLiveSessionsShown bounds the live sessions one listing returns, newest first.
const MaxLiveSessionsShown = 500

// AuditSessionRevoke is the audit action of an admin revoking a session.
const AuditSessionRevoke = "session.revoke"

// LiveSession is a minted session that is neither revoked nor expired.
type LiveSession struct {
	ID string
	// BindingID is set for a preview session, which is on no task (its
	// TaskID and StepID are empty; docs/architecture.md#preview-sessions).
	BindingID string
	TaskID    string
	TaskTitle string
	StepID    string
	UserID    string // "" when no user minted it
	UserEmail string
	CreatedAt time.Time
	ExpiresAt time.Time
}

// LiveSessions returns the workspace's live sessions, newest first, at most
// MaxLiveSessionsShown, with each one's task title and user email.
func (m *Minter) LiveSessions(ctx context.Context, workspaceID string) ([]LiveSession, error) {
	db := m.Store.DB.WithContext(ctx)
	var rows []models.AppSession
	err := db.Where("workspace_id = ? AND revoked_at IS NULL AND expires_at > ?", workspaceID, time.Now().UTC()).
		Order("created_at DESC, id DESC").Limit(MaxLiveSessionsShown).Find(&rows).Error
	if err != nil {
		return nil, fmt.Errorf("artifact: list live sessions: %w", err)
	}
	out := make([]LiveSession, 0, len(rows))
	if len(rows) == 0 {
		return out, nil
	}
	taskIDs, userIDs := []string{}, []string{}
	for _, r := range rows {
		if r.TaskID != "" { // a preview session is on no task
			taskIDs = append(taskIDs, r.TaskID)
		}
		if r.UserID != nil {
			userIDs = append(userIDs, *r.UserID)
		}
	}
	var tasks []models.Task
	if err := db.Select("id", "title").Where("id IN ? AND workspace_id = ?", taskIDs, workspaceID).Find(&tasks).Error; err != nil {
		return nil, fmt.Errorf("artifact: task titles: %w", err)
	}
	titles := map[string]string{}
	for _, t := range tasks {
		titles[t.ID] = t.Title
	}
	emails := map[string]string{}
	if len(userIDs) > 0 {
		var users []models.User
		if err := db.Select("id", "email").Where("id IN ? AND workspace_id = ?", userIDs, workspaceID).Find(&users).Error; err != nil {
			return nil, fmt.Errorf("artifact: user emails: %w", err)
		}
		for _, u := range users {
			emails[u.ID] = u.Email
		}
	}
	for _, r := range rows {
		ls := LiveSession{ID: r.ID, TaskID: r.TaskID, TaskTitle: titles[r.TaskID], StepID: r.StepID,
			CreatedAt: r.CreatedAt, ExpiresAt: r.ExpiresAt}
		if r.UserID != nil {
			ls.UserID, ls.UserEmail = *r.UserID, emails[*r.UserID]
		}
		if r.BindingID != nil {
			ls.BindingID = *r.BindingID
		}
		out = append(out, ls)
	}
	return out, nil
}

// RevokeSession ends a session of the workspace at once on every replica
// (session.Issuer.Revoke) and records who did it in the audit log. A session
// of another workspace is not found.
func (m *Minter) RevokeSession(ctx context.Context, workspaceID, actor, sessionID string) error {
	if !models.IsID(sessionID) {
		return apperr.NotFoundf("session %s not found", sessionID)
	}
	var row models.AppSession
	err := m.Store.DB.WithContext(ctx).Where("id = ? AND workspace_id = ?", sessionID, workspaceID).Take(&row).Error
	if err := store.NotFound(err, "artifact: find session", "session "+sessionID); err != nil {
		return err
	}
	if err := m.Sessions.Revoke(ctx, row.ID); err != nil {
		return err
	}
	// A preview is on no task: it names its binding instead.
	detail := map[string]any{"kind": row.Kind, "already_revoked": row.RevokedAt != nil}
	if row.Kind == models.SessionPreview && row.BindingID != nil {
		detail["binding_id"] = *row.BindingID
	} else {
		detail["task_id"], detail["step_id"] = row.TaskID, row.StepID
	}
	return audit.Record(ctx, m.Store.DB, audit.Entry{
		WorkspaceID: workspaceID, Actor: actor, Action: AuditSessionRevoke, TargetType: "session", TargetID: row.ID,
		Detail: detail,
	})
}
