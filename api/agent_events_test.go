package api_test

import (
	"context"
	"fmt"
	"net/url"
	"testing"

	"github.com/stretchr/testify/require"
	"gorm.io/gorm"

	"github.com/appruntime/appruntime/internal/auth"
	"github.com/appruntime/appruntime/internal/feed"
	"github.com/appruntime/appruntime/internal/outbox"
	"github.com/appruntime/appruntime/internal/review"
	"github.com/appruntime/appruntime/internal/session"
	"github.com/appruntime/appruntime/internal/testkit"
	"github.com/appruntime/appruntime/models"
)

func eventsPath(taskID string, after string) string {
	p := "/api/agent/tasks/" + taskID + "/events"
	if after != "" {
		p += "?after=" + url.QueryEscape(after)
	}
	return p
}

func newAgentTask(t *testing.T, db *gorm.DB, tn testkit.Tenant, status string) models.Task {
	t.Helper()
	task := models.Task{ID: models.NewID(), WorkspaceID: tn.Workspace.ID, AgentID: tn.Agent.ID, Status: status}
	require.NoError(t, db.Create(&task).Error)
	return task
}

// eventIDs returns the ids of a reply's events, in order.
func eventIDs(t *testing.T, r response) []int64 {
	t.Helper()
	events, ok := r.Body["events"].([]any)
	require.True(t, ok, "events must be a list: %s", r.Raw)
	ids := make([]int64, 0, len(events))
	for _, e := range events {
		ids = append(ids, int64(e.(map[string]any)["id"].(float64)))
	}
	return ids
}

func TestAgentTaskEventsPaging(t *testing.T) {
	t.Parallel()
	a := newTestAPI(t)
	db := a.Store.DB
	tn := testkit.NewTenant(t, db)
	task := newAgentTask(t, db, tn, models.TaskRunning)
	other := newAgentTask(t, db, tn, models.TaskRunning)
	const total = feed.MaxEventsPerPage + 5
	var want []int64
	for i := range total {
		ev := models.FeedEvent{TaskID: task.ID, Type: models.FeedAgentAction, Name: fmt.Sprintf("edit_%d", i),
			Payload: models.MustJSON(map[string]int{"n": i}), Actor: "user:x"}
		require.NoError(t, db.Create(&ev).Error)
		want = append(want, ev.ID)
		// Another task's events interleave and must never show.
		require.NoError(t, db.Create(&models.FeedEvent{TaskID: other.ID, Type: models.FeedAgentAction}).Error)
	}

	r := a.call(t, "GET", eventsPath(task.ID, ""), tn.AgentToken, nil)
	require.Equal(t, 200, r.Status, "%s", r.Raw)
	require.Equal(t, want[:feed.MaxEventsPerPage], eventIDs(t, r))
	require.EqualValues(t, want[feed.MaxEventsPerPage-1], r.Body["next_after"])
	first := r.Body["events"].([]any)[0].(map[string]any)
	require.Equal(t, models.FeedAgentAction, first["type"])
	require.Equal(t, "edit_0", first["name"])
	require.Nil(t, first["step_id"])
	require.Equal(t, map[string]any{"n": float64(0)}, first["payload"])
	require.Equal(t, "user:x", first["actor"])
	require.NotEmpty(t, first["created_at"])

	r = a.call(t, "GET", eventsPath(task.ID, fmt.Sprint(r.Body["next_after"])), tn.AgentToken, nil)
	require.Equal(t, 200, r.Status)
	require.Equal(t, want[feed.MaxEventsPerPage:], eventIDs(t, r))
	last := want[len(want)-1]
	require.EqualValues(t, last, r.Body["next_after"])

	r = a.call(t, "GET", eventsPath(task.ID, fmt.Sprint(last)), tn.AgentToken, nil)
	require.Equal(t, 200, r.Status)
	require.Empty(t, eventIDs(t, r))
	require.EqualValues(t, last, r.Body["next_after"], "with nothing new the cursor stays")
	require.Contains(t, string(r.Raw), `"events":[]`)

	r = a.call(t, "GET", eventsPath(task.ID, fmt.Sprint(want[2])), tn.AgentToken, nil)
	require.Equal(t, want[3:3+feed.MaxEventsPerPage], eventIDs(t, r))
}

func TestAgentTaskEventsRefusals(t *testing.T) {
	t.Parallel()
	a := newTestAPI(t)
	db := a.Store.DB
	tn, stranger := testkit.NewTenant(t, db), testkit.NewTenant(t, db)
	task := newAgentTask(t, db, tn, models.TaskRunning)
	strangersTask := newAgentTask(t, db, stranger, models.TaskRunning)
	// A second agent of the same workspace may not read the first one's tasks either.
	sibling := models.Agent{ID: models.NewID(), WorkspaceID: tn.Workspace.ID, Name: "sibling"}
	require.NoError(t, db.Create(&sibling).Error)
	_, siblingToken, err := auth.IssueToken(context.Background(), db, tn.Workspace.ID, models.ScopeAgent, "sibling", nil, &sibling.ID)
	require.NoError(t, err)

	for _, tc := range []struct {
		name, path, token string
		status            int
		message           string
	}{
		{"another workspace's task", eventsPath(strangersTask.ID, ""), tn.AgentToken, 404, "task " + strangersTask.ID + " not found"},
		{"another agent's task", eventsPath(task.ID, ""), siblingToken, 404, "task " + task.ID + " not found"},
		{"no such task", eventsPath(models.NewID(), ""), tn.AgentToken, 404, "not found"},
		{"not a task id", eventsPath("nope", ""), tn.AgentToken, 404, "task nope not found"},
		{"negative after", eventsPath(task.ID, "-1"), tn.AgentToken, 400, "after must be a non-negative integer"},
		{"word after", eventsPath(task.ID, "latest"), tn.AgentToken, 400, "after must be a non-negative integer"},
		{"fractional after", eventsPath(task.ID, "1.5"), tn.AgentToken, 400, "after must be a non-negative integer"},
		{"overflowing after", eventsPath(task.ID, "99999999999999999999"), tn.AgentToken, 400, "after must be a non-negative integer"},
		{"no token", eventsPath(task.ID, ""), "", 401, "agent token"},
		{"host token", eventsPath(task.ID, ""), tn.HostToken, 401, "agent token"},
	} {
		r := a.call(t, "GET", tc.path, tc.token, nil)
		require.Equal(t, tc.status, r.Status, "%s: %s", tc.name, r.Raw)
		require.Contains(t, r.Body["error"], tc.message, tc.name)
	}
}

func TestResumeEventReadableWithoutWebhook(t *testing.T) {
	t.Parallel()
	a := newTestAPI(t)
	db := a.Store.DB
	tn := testkit.NewTenant(t, db)
	task := newAgentTask(t, db, tn, models.TaskWaitingForInput)
	step := models.Step{ID: models.NewID(), TaskID: task.ID, Kind: models.StepAppTool, Status: models.StepCompleted}
	require.NoError(t, db.Create(&step).Error)
	require.NoError(t, db.Create(&models.TaskAwait{ID: models.NewID(), TaskID: task.ID, SourceType: models.AwaitSourceAppTool,
		CorrelationKey: step.ID, Status: models.AwaitPending}).Error)

	ctx := context.Background()
	claims := session.Claims{TaskID: task.ID, AgentID: tn.Agent.ID, WorkspaceID: tn.Workspace.ID, StepID: step.ID}
	require.NoError(t, a.Store.Tx(ctx, func(tx *gorm.DB) error {
		_, _, err := review.ResolveSessionAwait(ctx, tx, claims, "user:"+tn.Admin.ID, "approve")
		return err
	}))
	n, err := a.P.Relay.RunOnce(ctx)
	require.NoError(t, err)
	require.Equal(t, 1, n)
	var row models.Outbox
	require.NoError(t, db.Where("kind = ?", outbox.KindResumeEvent).Take(&row).Error)
	require.NoError(t, a.P.Resumes.HandleResume(ctx, row.ID))

	r := a.call(t, "GET", eventsPath(task.ID, "0"), tn.AgentToken, nil)
	require.Equal(t, 200, r.Status, "%s", r.Raw)
	events := r.Body["events"].([]any)
	require.Len(t, events, 1)
	ev := events[0].(map[string]any)
	require.Equal(t, models.FeedTaskResumed, ev["type"])
	require.Equal(t, step.ID, ev["step_id"])
	payload := ev["payload"].(map[string]any)
	require.Equal(t, row.ID, payload["id"])
	require.Equal(t, review.ResumeEventType, payload["type"])
	require.Equal(t, "approve", payload["action"])
}
