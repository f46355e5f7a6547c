package feed

import (
	"encoding/json"
	"fmt"

	"gorm.io/gorm"

	"github.com/appruntime/appruntime/internal/outbox"
	"github.com/appruntime/appruntime/internal/webhook"
	"github.com/appruntime/appruntime/models"
)

// PushedType returns the webhook event type a feed row of feedType with
// payload is pushed as, or "" for a row that is not pushed from the feed
// (the review's own events, task.resumed/released/expired/aborted, are
// written by internal/review; docs/agent-platforms.md#webhook-event-catalogue).
func PushedType(feedType string, payload models.JSON) string {
	switch feedType {
	case models.FeedToolCall:
		var p struct {
			Status string `json:"status"`
		}
		_ = payload.Decode(&p)
		if p.Status == models.ToolCallFailed {
			return webhook.ToolCallFailed
		}
		return webhook.ToolCallCompleted
	case models.FeedToolCallClick:
		return webhook.InputAnswered
	case models.FeedUserMessage:
		return webhook.MessageSent
	case models.FeedReply:
		return webhook.ReplyStored
	case models.FeedAgentActionUnknown:
		return webhook.OutcomeUnknown
	}
	return ""
}

// pushTarget is a task's agent as a push needs it.
type pushTarget struct {
	TaskID, AgentID, WorkspaceID string
	ResumeWebhookURL             string
	WebhookEvents                models.JSON
}

// push writes, inside tx (the transaction of the feed rows), the outbox
// row of the webhook delivery of every row of rows whose task's agent has a
// webhook and subscribes to the row's type: the event then reaches the
// agent exactly when the row commits, and the events feed keeps carrying
// the same row. Rows of no pushed type cost nothing; the others one query.
func push(tx *gorm.DB, rows []models.FeedEvent) error {
	types := make([]string, len(rows))
	var tasks []string
	for i, r := range rows {
		if types[i] = PushedType(r.Type, r.Payload); types[i] != "" {
			tasks = append(tasks, r.TaskID)
		}
	}
	if len(tasks) == 0 {
		return nil
	}
	var targets []pushTarget
	err := tx.Table("tasks").Select("tasks.id AS task_id, tasks.agent_id, tasks.workspace_id, agents.resume_webhook_url, agents.webhook_events").
		Joins("JOIN agents ON agents.id = tasks.agent_id").
		Where("tasks.id IN ? AND agents.resume_webhook_url <> ''", LockOrder(tasks)).Scan(&targets).Error
	if err != nil {
		return fmt.Errorf("feed: find webhooks: %w", err)
	}
	byTask := make(map[string]pushTarget, len(targets))
	for _, t := range targets {
		byTask[t.TaskID] = t
	}
	for i, r := range rows {
		t, ok := byTask[r.TaskID]
		if types[i] == "" || !ok {
			continue
		}
		agent := models.Agent{WebhookEvents: t.WebhookEvents}
		if !webhook.Subscribed(agent.WebhookEventList(), types[i]) {
			continue
		}
		ev := webhook.Event{Type: types[i], TaskID: r.TaskID, AgentID: t.AgentID, WorkspaceID: t.WorkspaceID,
			ResolvedBy: r.Actor, ResolvedAt: r.CreatedAt.UTC(), Name: r.Name, Data: json.RawMessage(r.Payload)}
		if r.StepID != nil {
			ev.StepID = *r.StepID
		}
		if _, err := outbox.Add(tx, outbox.KindResumeEvent, ev); err != nil {
			return err
		}
	}
	return nil
}
