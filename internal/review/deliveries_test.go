package review_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/appruntime/appruntime/internal/apperr"
	"github.com/appruntime/appruntime/internal/outbox"
	"github.com/appruntime/appruntime/internal/review"
	"github.com/appruntime/appruntime/internal/store"
	"github.com/appruntime/appruntime/internal/testkit"
	"github.com/appruntime/appruntime/internal/webhook"
	"github.com/appruntime/appruntime/models"
)

// TestDeliveriesKeepWhatTheirFilterNames lists the attempts of two agents
// of a workspace (and one of another workspace) by agent, task, event type
// and outcome, on Postgres and SQLite, with the event types and agent names
// each row reads as.
func TestDeliveriesKeepWhatTheirFilterNames(t *testing.T) {
	t.Parallel()
	testkit.EachDialect(t, func(t *testing.T, st *store.Store) {
		ctx := context.Background()
		tn := testkit.NewTenant(t, st.DB)
		other := testkit.NewTenant(t, st.DB)
		second := models.Agent{ID: models.NewID(), WorkspaceID: tn.Workspace.ID, Name: "second agent"}
		require.NoError(t, st.DB.Create(&second).Error)
		base := time.Date(2026, 3, 10, 12, 0, 0, 0, time.UTC)
		n := 0
		// deliver records one attempt of a new event of type typ, at a
		// later time than the last.
		deliver := func(ws, agentID, typ string, status int, finished bool) string {
			tk := models.Task{ID: models.NewID(), WorkspaceID: ws, AgentID: agentID, Status: models.TaskRunning, CreatedAt: base, UpdatedAt: base}
			require.NoError(t, st.DB.Create(&tk).Error)
			eventID, err := outbox.Add(st.DB, outbox.KindResumeEvent, review.ResumePayload{Type: typ, TaskID: tk.ID, AgentID: agentID, WorkspaceID: ws})
			require.NoError(t, err)
			n++
			d := models.WebhookDelivery{ID: models.NewID(), EventID: eventID, EventType: typ, AgentID: agentID, TaskID: tk.ID,
				URL: "https://hooks.example.test", Attempt: 1, StatusCode: status, CreatedAt: base.Add(time.Duration(n) * time.Minute)}
			if finished {
				at := d.CreatedAt.Add(time.Second)
				d.FinishedAt = &at
			}
			require.NoError(t, st.DB.Create(&d).Error)
			return tk.ID
		}
		resumedOK := deliver(tn.Workspace.ID, tn.Agent.ID, review.ResumeEventType, 204, true)
		abortedFailed := deliver(tn.Workspace.ID, tn.Agent.ID, review.AbortEventType, 500, true)
		unfinished := deliver(tn.Workspace.ID, second.ID, review.ResumeEventType, 0, false)
		// The type is the attempt's own: it outlives the pruned outbox row.
		pruned := deliver(tn.Workspace.ID, second.ID, webhook.ToolCallFailed, 0, true)
		require.NoError(t, st.DB.Where("payload ->> 'task_id' = ?", pruned).Delete(&models.Outbox{}).Error)
		deliver(other.Workspace.ID, other.Agent.ID, review.ResumeEventType, 204, true)

		for _, tc := range []struct {
			name string
			f    review.DeliveryFilter
			want []string
		}{
			{"everything, newest first", review.DeliveryFilter{}, []string{pruned, unfinished, abortedFailed, resumedOK}},
			{"agent", review.DeliveryFilter{AgentID: second.ID}, []string{pruned, unfinished}},
			{"another workspace's agent", review.DeliveryFilter{AgentID: other.Agent.ID}, nil},
			{"task", review.DeliveryFilter{TaskID: abortedFailed}, []string{abortedFailed}},
			{"event type", review.DeliveryFilter{EventType: review.ResumeEventType}, []string{unfinished, resumedOK}},
			{"aborted", review.DeliveryFilter{EventType: review.AbortEventType}, []string{abortedFailed}},
			{"pruned outbox row", review.DeliveryFilter{EventType: webhook.ToolCallFailed}, []string{pruned}},
			{"delivered", review.DeliveryFilter{Status: review.DeliveryDelivered}, []string{resumedOK}},
			{"failed", review.DeliveryFilter{Status: review.DeliveryFailed}, []string{pruned, abortedFailed}},
			{"unfinished", review.DeliveryFilter{Status: review.DeliveryUnfinished}, []string{unfinished}},
			{"agent and status", review.DeliveryFilter{AgentID: tn.Agent.ID, Status: review.DeliveryUnfinished}, nil},
			{"second page", review.DeliveryFilter{Page: 2}, nil},
		} {
			page, err := review.Deliveries(ctx, st.DB, tn.Workspace.ID, tc.f)
			require.NoError(t, err, tc.name)
			var got []string
			for _, d := range page.Deliveries {
				got = append(got, d.TaskID)
			}
			require.Equal(t, tc.want, got, tc.name)
			require.False(t, page.HasMore, tc.name)
		}

		page, err := review.Deliveries(ctx, st.DB, tn.Workspace.ID, review.DeliveryFilter{})
		require.NoError(t, err)
		var types, names []string
		for _, d := range page.Deliveries {
			types, names = append(types, d.EventType), append(names, d.AgentName)
		}
		require.Equal(t, []string{webhook.ToolCallFailed, review.ResumeEventType, review.AbortEventType, review.ResumeEventType}, types)
		require.Equal(t, []string{second.Name, second.Name, tn.Agent.Name, tn.Agent.Name}, names)

		for _, f := range []review.DeliveryFilter{{Status: "ok"}, {EventType: "task.created"}, {AgentID: "bob"}, {TaskID: "42"}} {
			_, err := review.Deliveries(ctx, st.DB, tn.Workspace.ID, f)
			require.Equal(t, apperr.Invalid, apperr.CodeOf(err), "%+v", f)
		}
	})
}
