package artifact

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"gorm.io/gorm"

	"github.com/appruntime/appruntime/internal/apperr"
	"github.com/appruntime/appruntime/internal/feed"
	"github.com/appruntime/appruntime/models"
)

// MaxFeedPage is the most events one feed page holds.
const MaxFeedPage = 500

// FeedEvent is one event of a task's feed as the host shows it. An artifact
// event's payload is its snapshot with the live descriptor merged over it.
type FeedEvent struct {
	ID        int64          `json:"id"`
	StepID    *string        `json:"step_id"`
	Type      string         `json:"type"`
	Name      string         `json:"name"`
	Payload   map[string]any `json:"payload"`
	Actor     string         `json:"actor"`
	CreatedAt time.Time      `json:"created_at"`
}

// FeedPage is GET /api/tasks/{id}/feed's reply: the task and its events
// after the cursor, oldest first; Next is the cursor of the following page.
type FeedPage struct {
	TaskID string      `json:"task_id"`
	Status string      `json:"status"`
	Events []FeedEvent `json:"events"`
	Next   int64       `json:"next"`
}

// sessionKeys are the descriptor fields of a session, which a feed never carries.
var sessionKeys = []string{"session_token", "session_id", "expires_at"}

// Feed returns the feed of taskID, a task of workspaceID (another
// workspace's is 404), after the event id after. Each artifact event merges
// the step's live descriptor (Live) over the snapshot the feed recorded when
// it was built, the live value winning: the bundle version, display
// settings and await state a host shows are those of now. An artifact whose
// tool or binding was deleted since keeps its snapshot.
func (m *Minter) Feed(ctx context.Context, workspaceID, taskID string, after int64) (FeedPage, error) {
	if !models.IsID(taskID) {
		return FeedPage{}, apperr.NotFoundf("task %s not found", taskID)
	}
	var task models.Task
	err := m.Store.DB.WithContext(ctx).Where("id = ? AND workspace_id = ?", taskID, workspaceID).Take(&task).Error
	if errors.Is(err, gorm.ErrRecordNotFound) {
		return FeedPage{}, apperr.NotFoundf("task %s not found", taskID)
	}
	if err != nil {
		return FeedPage{}, fmt.Errorf("artifact: load task: %w", err)
	}
	rows, err := feed.Since(ctx, m.Store.DB, taskID, after, MaxFeedPage)
	if err != nil {
		return FeedPage{}, err
	}
	page := FeedPage{TaskID: task.ID, Status: task.Status, Events: make([]FeedEvent, 0, len(rows)), Next: after}
	for _, r := range rows {
		ev := FeedEvent{ID: r.ID, StepID: r.StepID, Type: r.Type, Name: r.Name, Actor: r.Actor, CreatedAt: r.CreatedAt}
		if len(r.Payload) > 0 {
			if err := json.Unmarshal(r.Payload, &ev.Payload); err != nil {
				ev.Payload = map[string]any{"value": json.RawMessage(r.Payload)}
			}
		}
		if r.Type == models.FeedArtifact && r.StepID != nil {
			if err := m.mergeLive(ctx, workspaceID, *r.StepID, &ev); err != nil {
				return FeedPage{}, err
			}
		}
		page.Events = append(page.Events, ev)
		page.Next = r.ID
	}
	return page, nil
}

// mergeLive overlays the step's live descriptor on ev's payload.
func (m *Minter) mergeLive(ctx context.Context, workspaceID, stepID string, ev *FeedEvent) error {
	d, err := m.Live(ctx, workspaceID, stepID)
	if apperr.Is(err, apperr.NotFound) || apperr.Is(err, apperr.Conflict) {
		return nil
	}
	if err != nil {
		return err
	}
	raw, err := json.Marshal(d)
	if err != nil {
		return fmt.Errorf("artifact: encode live descriptor: %w", err)
	}
	var live map[string]any
	if err := json.Unmarshal(raw, &live); err != nil {
		return fmt.Errorf("artifact: decode live descriptor: %w", err)
	}
	for _, k := range sessionKeys {
		delete(live, k)
	}
	if ev.Payload == nil {
		ev.Payload = map[string]any{}
	}
	for k, v := range live {
		ev.Payload[k] = v
	}
	return nil
}
