package feed

import (
	"context"
	"time"

	"gorm.io/gorm"

	"github.com/appruntime/appruntime/internal/apperr"
	"github.com/appruntime/appruntime/internal/store"
	"github.com/appruntime/appruntime/models"
)

// MaxEventsPerPage is how many feed events one pull returns at most.
const MaxEventsPerPage = 100

// TaskEvent is one feed event as the pull endpoint shows it.
type TaskEvent struct {
	ID        int64       `json:"id"`
	Type      string      `json:"type"`
	Name      string      `json:"name"`
	StepID    *string     `json:"step_id"`
	Payload   models.JSON `json:"payload"`
	Actor     string      `json:"actor"`
	CreatedAt time.Time   `json:"created_at"`
}

// EventPage is a page of a task's feed after a cursor. NextAfter is the id
// of the last event returned, or the cursor given when there was none: a
// platform polls with after=NextAfter and is never shown an event twice.
type EventPage struct {
	Events    []TaskEvent `json:"events"`
	NextAfter int64       `json:"next_after"`
}

// AgentTaskEvents returns the feed events of task taskID with an id greater
// than after, oldest first, at most MaxEventsPerPage. The task must belong
// to agent agentID of workspace workspaceID; any other task is not found,
// so an agent cannot learn which tasks other agents have. This is how a
// platform without a resume webhook learns that its task resumed.
func AgentTaskEvents(ctx context.Context, db *gorm.DB, workspaceID, agentID, taskID string, after int64) (EventPage, error) {
	if after < 0 {
		return EventPage{}, apperr.Invalidf("after must be a non-negative integer")
	}
	if !models.IsID(taskID) {
		return EventPage{}, apperr.NotFoundf("task %s not found", taskID)
	}
	db = db.WithContext(ctx)
	var task models.Task
	err := db.Select("id").Where("id = ? AND workspace_id = ? AND agent_id = ?", taskID, workspaceID, agentID).Take(&task).Error
	if err := store.NotFound(err, "feed: find task", "task "+taskID); err != nil {
		return EventPage{}, err
	}
	rows, err := Since(ctx, db, taskID, after, MaxEventsPerPage)
	if err != nil {
		return EventPage{}, err
	}
	page := EventPage{Events: make([]TaskEvent, 0, len(rows)), NextAfter: after}
	for _, r := range rows {
		page.Events = append(page.Events, TaskEvent{
			ID: r.ID, Type: r.Type, Name: r.Name, StepID: r.StepID,
			Payload: r.Payload, Actor: r.Actor, CreatedAt: r.CreatedAt,
		})
		page.NextAfter = r.ID
	}
	return page, nil
}
