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
// task's events like any other. The caller bounds the text.
func (s *Service) AddUserMessage(ctx context.Context, workspaceID, taskID, actor, text string) error {
	if !models.IsID(taskID) {
		return apperr.NotFoundf("task not found")
	}
	var t models.Task
	err := s.st.DB.WithContext(ctx).Select("id").Where("id = ? AND workspace_id = ?", taskID, workspaceID).Take(&t).Error
	if err := store.NotFound(err, "task: find task", "task"); err != nil {
		return err
	}
	return s.st.Tx(ctx, func(tx *gorm.DB) error {
		return feed.Insert(ctx, tx, false, models.FeedEvent{TaskID: t.ID, Type: models.FeedUserMessage,
			Payload: models.MustJSON(map[string]string{"text": text}), Actor: actor, CreatedAt: time.Now().UTC()})
	})
}
