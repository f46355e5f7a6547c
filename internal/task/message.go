package task

import (
	"context"
	"time"

	"gorm.io/gorm"

	"github.com/appruntime/appruntime/internal/apperr"
	"github.com/appruntime/appruntime/internal/feed"
	"github.com/appruntime/appruntime/internal/store"
	"github.com/appruntime/appruntime/models"
)

// AddUserMessage records a person's message to the agent on a task of
// workspaceID as a user_message feed event: the agent reads it from its
// task's events like any other. The caller bounds the text. A completed or
// failed task is refused with a conflict: no agent would ever read it.
func (s *Service) AddUserMessage(ctx context.Context, workspaceID, taskID, actor, text string) error {
	if !models.IsID(taskID) {
		return apperr.NotFoundf("task not found")
	}
	var t models.Task
	err := s.st.DB.WithContext(ctx).Select("id", "status").Where("id = ? AND workspace_id = ?", taskID, workspaceID).Take(&t).Error
	if err := store.NotFound(err, "task: find task", "task"); err != nil {
		return err
	}
	if t.Status == models.TaskCompleted || t.Status == models.TaskFailed {
		return apperr.Conflictf("the task is %s: its agent reads no more events, so the message was not sent", t.Status)
	}
	return s.st.Tx(ctx, func(tx *gorm.DB) error {
		return feed.Insert(ctx, tx, false, models.FeedEvent{TaskID: t.ID, Type: models.FeedUserMessage,
			Payload: models.MustJSON(map[string]string{"text": text}), Actor: actor, CreatedAt: time.Now().UTC()})
	})
}
