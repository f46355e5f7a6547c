package review_test

import (
	"context"
	"encoding/json"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"gorm.io/gorm"

	"github.com/appruntime/appruntime/internal/feed"
	"github.com/appruntime/appruntime/internal/outbox"
	"github.com/appruntime/appruntime/internal/review"
	"github.com/appruntime/appruntime/internal/store"
	"github.com/appruntime/appruntime/internal/testkit"
	"github.com/appruntime/appruntime/internal/webhook"
	"github.com/appruntime/appruntime/models"
)

// events returns the webhook events the outbox holds for the test's task,
// oldest first.
func (p *parked) events(t *testing.T) []review.ResumePayload {
	t.Helper()
	var rows []models.Outbox
	require.NoError(t, p.st.DB.Where("kind = ? AND payload ->> 'task_id' = ?", outbox.KindResumeEvent, p.task.ID).
		Order("created_at, id").Find(&rows).Error)
	out := make([]review.ResumePayload, len(rows))
	for i, r := range rows {
		require.NoError(t, r.Payload.Decode(&out[i]))
		out[i].ID = r.ID
	}
	return out
}

func (p *parked) subscribe(t *testing.T, types any) {
	t.Helper()
	require.NoError(t, p.st.DB.Model(&models.Agent{}).Where("id = ?", p.tn.Agent.ID).
		Update("webhook_events", models.MustJSON(types)).Error)
}

// TestFeedEventsArePushedToSubscribedAgents checks each event that used to
// be pull-only: its feed row and, in the same transaction, the outbox row
// of its webhook event, with its catalogue type and the feed row's payload
// as data; none for an agent without a webhook or not subscribed to the
// type (docs/agent-platforms.md#webhook-event-catalogue).
func TestFeedEventsArePushedToSubscribedAgents(t *testing.T) {
	t.Parallel()
	cases := []struct {
		feedType string
		payload  map[string]any
		want     string
	}{
		{models.FeedToolCall, map[string]any{"status": models.ToolCallCompleted, "result": map[string]any{"ok": true}}, webhook.ToolCallCompleted},
		{models.FeedToolCall, map[string]any{"status": models.ToolCallPendingInput}, webhook.ToolCallCompleted},
		{models.FeedToolCall, map[string]any{"status": models.ToolCallFailed, "error": "upstream answered 500"}, webhook.ToolCallFailed},
		{models.FeedToolCallClick, map[string]any{"button": "yes"}, webhook.InputAnswered},
		{models.FeedUserMessage, map[string]any{"text": "please recheck line 3"}, webhook.MessageSent},
		{models.FeedReply, map[string]any{"final": false}, webhook.ReplyStored},
		{models.FeedAgentActionUnknown, map[string]any{"reason": "answer_lost"}, webhook.OutcomeUnknown},
		{models.FeedAgentAction, map[string]any{"op": "update"}, ""},
	}
	testkit.EachDialect(t, func(t *testing.T, st *store.Store) {
		p := newParkedOn(t, st)
		insert := func(typ string, payload map[string]any) {
			t.Helper()
			require.NoError(t, st.Tx(context.Background(), func(tx *gorm.DB) error {
				return feed.Insert(context.Background(), tx, false, models.FeedEvent{TaskID: p.task.ID, StepID: &p.step.ID,
					Type: typ, Name: "lookup", Payload: models.MustJSON(payload), Actor: "user:someone"})
			}))
		}
		insert(models.FeedToolCall, map[string]any{"status": models.ToolCallCompleted})
		require.Empty(t, p.events(t), "an agent without a webhook is not pushed to")

		p.setWebhook(t, "https://agent.example/hook")
		for _, c := range cases {
			before := len(p.events(t))
			insert(c.feedType, c.payload)
			got := p.events(t)
			if c.want == "" {
				require.Len(t, got, before, "%s is not pushed", c.feedType)
				continue
			}
			require.Len(t, got, before+1, c.feedType)
			ev := got[before]
			require.Equal(t, c.want, ev.Type)
			require.Equal(t, p.tn.Agent.ID, ev.AgentID)
			require.Equal(t, p.tn.Workspace.ID, ev.WorkspaceID)
			require.Equal(t, p.step.ID, ev.StepID)
			require.Equal(t, "user:someone", ev.ResolvedBy)
			require.Equal(t, "lookup", ev.Name)
			require.JSONEq(t, string(models.MustJSON(c.payload)), string(ev.Data))
		}

		p.subscribe(t, []string{webhook.MessageSent})
		before := len(p.events(t))
		insert(models.FeedToolCall, map[string]any{"status": models.ToolCallFailed})
		require.Len(t, p.events(t), before, "not subscribed to tool_call.failed")
		insert(models.FeedUserMessage, map[string]any{"text": "hi"})
		require.Len(t, p.events(t), before+1, "subscribed to message.sent")

		p.subscribe(t, []string{})
		insert(models.FeedUserMessage, map[string]any{"text": "hi"})
		require.Len(t, p.events(t), before+1, "an empty subscription receives nothing")

		var feedRows int64
		require.NoError(t, st.DB.Model(&models.FeedEvent{}).Where("task_id = ?", p.task.ID).Count(&feedRows).Error)
		require.EqualValues(t, 1+len(cases)+3, feedRows, "the events feed keeps every event")
	})
}

// TestReleaseExpiryAndAbortCarryTheirTypeAndNote checks the review events:
// an admin's release is task.released with its note, an expiry
// task.expired, an abort task.aborted with its note, and a reviewer's
// action task.resumed.
func TestReleaseExpiryAndAbortCarryTheirTypeAndNote(t *testing.T) {
	t.Parallel()
	testkit.EachDialect(t, func(t *testing.T, st *store.Store) {
		p := newParkedOn(t, st)
		ctx := context.Background()
		parked := review.NewParked(st, nil)
		actor := "user:" + p.tn.Admin.ID

		_, err := parked.Release(ctx, p.tn.Workspace.ID, p.await.ID, actor, "customer confirmed by phone")
		require.NoError(t, err)
		_, aw2 := p.addAwait(t)
		_, err = parked.Abort(ctx, p.tn.Workspace.ID, aw2.ID, actor, "duplicate invoice")
		require.NoError(t, err)
		_, aw3 := p.addAwait(t)
		require.NoError(t, review.ScheduleAwaitExpiry(st.DB, p.tn.Workspace.ID, aw3.ID, time.Now()))
		var exp models.Outbox
		require.NoError(t, st.DB.Where("kind = ? AND payload ->> 'await_id' = ?", outbox.KindAwaitExpiry, aw3.ID).Take(&exp).Error)
		require.NoError(t, parked.Expire(ctx, exp.ID))
		step4, _ := p.addAwait(t)
		p.release(t, step4)

		got := p.events(t)
		require.Len(t, got, 4)
		byAwait := map[string]review.ResumePayload{}
		for _, e := range got {
			byAwait[e.AwaitID] = e
		}
		require.Equal(t, webhook.TaskReleased, byAwait[p.await.ID].Type)
		require.Equal(t, "customer confirmed by phone", byAwait[p.await.ID].Note)
		require.Equal(t, review.ReasonAdminRelease, byAwait[p.await.ID].Reason)
		require.Equal(t, webhook.TaskAborted, byAwait[aw2.ID].Type)
		require.Equal(t, "duplicate invoice", byAwait[aw2.ID].Note)
		require.Equal(t, webhook.TaskExpired, byAwait[aw3.ID].Type)
		require.Equal(t, review.ExpiryActor, byAwait[aw3.ID].ResolvedBy)
		resumed := 0
		for _, e := range got {
			if e.Type == webhook.TaskResumed {
				resumed++
				require.Equal(t, "approve_invoice", e.Action)
			}
		}
		require.Equal(t, 1, resumed)
	})
}

// TestAPushedEventIsDeliveredAndResumesNothing runs a pushed event through
// the resume and delivery jobs: the webhook receives it with its type, the
// attempt records the type, and the parked task stays parked; an event of
// a type the agent does not subscribe to is not sent.
func TestAPushedEventIsDeliveredAndResumesNothing(t *testing.T) {
	t.Parallel()
	testkit.EachDialect(t, func(t *testing.T, st *store.Store) {
		p := newParkedOn(t, st)
		ctx := context.Background()
		rc := newReceiver(t, http.StatusNoContent)
		p.setWebhook(t, rc.URL+"/hook")
		require.NoError(t, st.Tx(ctx, func(tx *gorm.DB) error {
			return feed.Insert(ctx, tx, false, models.FeedEvent{TaskID: p.task.ID, Type: models.FeedUserMessage,
				Payload: models.MustJSON(map[string]string{"text": "check the VAT"}), Actor: "user:reviewer"})
		}))
		evs := p.events(t)
		require.Len(t, evs, 1)
		require.NoError(t, p.resumer.HandleResume(ctx, evs[0].ID))
		require.Equal(t, models.TaskWaitingForInput, p.taskStatus(t), "a message resumes nothing")
		require.NoError(t, p.resumer.HandleWebhook(ctx, evs[0].ID))
		got := rc.requests()
		require.Len(t, got, 1)
		var body map[string]any
		require.NoError(t, json.Unmarshal(got[0].body, &body))
		require.Equal(t, webhook.MessageSent, body["type"])
		require.Equal(t, evs[0].ID, body["id"])
		require.Equal(t, map[string]any{"text": "check the VAT"}, body["data"])
		var d models.WebhookDelivery
		require.NoError(t, st.DB.Where("event_id = ?", evs[0].ID).Take(&d).Error)
		require.Equal(t, webhook.MessageSent, d.EventType)

		// A type the agent does not subscribe to writes no event.
		p.subscribe(t, []string{webhook.TaskResumed})
		require.NoError(t, st.Tx(ctx, func(tx *gorm.DB) error {
			return feed.Insert(ctx, tx, false, models.FeedEvent{TaskID: p.task.ID, Type: models.FeedReply,
				Payload: models.MustJSON(map[string]any{"final": false}), Actor: "agent"})
		}))
		require.Len(t, p.events(t), 1, "reply.stored is not subscribed to")
	})
}
