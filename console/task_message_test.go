package console_test

import (
	"context"
	"net/http"
	"net/url"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/appruntime/appruntime/internal/task"
	"github.com/appruntime/appruntime/models"
)

// TestSendToAgentOfAFinishedTaskIsRefused: "Send to agent" on a running
// task records the message; on a completed one it answers 409 with the
// reason and records nothing (it once answered "sent"), and the page of a
// finished task shows why instead of the composer.
func TestSendToAgentOfAFinishedTaskIsRefused(t *testing.T) {
	t.Parallel()
	c := newTestConsole(t)
	bg := context.Background()
	caller := task.Caller{WorkspaceID: c.Tenant.Workspace.ID, AgentID: c.Tenant.Agent.ID, Actor: "agent:" + c.Tenant.Agent.ID}
	tk, err := c.P.Tasks.Create(bg, caller, task.TaskInput{Title: "Finish me"})
	require.NoError(t, err)
	cl := c.signedIn(t)
	messages := func() int64 {
		var n int64
		require.NoError(t, c.Store.DB.Model(&models.FeedEvent{}).Where("task_id = ? AND type = ?", tk.ID, models.FeedUserMessage).Count(&n).Error)
		return n
	}

	require.Contains(t, cl.get("/tasks/"+tk.ID).Body, "Send to agent", "a running task has the composer")
	require.Equal(t, http.StatusSeeOther, cl.post("/tasks/"+tk.ID+"/messages", url.Values{"message": {"still there?"}}).Status)
	require.EqualValues(t, 1, messages())

	_, err = c.P.Replies.Post(bg, caller, tk.ID, []byte(`{"final": true, "blocks": [{"type": "text", "text": "Done."}]}`))
	require.NoError(t, err)
	p := cl.post("/tasks/"+tk.ID+"/messages", url.Values{"message": {"Thanks."}})
	require.Equal(t, http.StatusConflict, p.Status, p.Body)
	require.Contains(t, p.Body, "the task is completed")
	require.EqualValues(t, 1, messages(), "nothing recorded for a finished task")

	// The page offers no composer on a finished task, and says why.
	page := cl.get("/tasks/" + tk.ID)
	require.Equal(t, http.StatusOK, page.Status, page.Body)
	require.NotContains(t, page.Body, "Send to agent")
	require.Contains(t, page.Body, `id="composer-closed">The task is completed: its agent reads no more events`)
}
