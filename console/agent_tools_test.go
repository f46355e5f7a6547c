package console_test

import (
	"context"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/appruntime/appruntime/internal/agenttool"
	"github.com/appruntime/appruntime/internal/task"
	"github.com/appruntime/appruntime/models"
)

func TestAgentToolsEditor(t *testing.T) {
	t.Parallel()
	c := newTestConsole(t)
	cl := c.signedIn(t)
	base := "/agents/" + c.Tenant.Agent.ID + "/tools"
	require.Equal(t, http.StatusOK, cl.get(base).Status)

	decl := `{"name": "translate", "displayName": "Translate", "description": "Translates text.",
		"input": {"type": "object", "properties": {"text": {"type": "string"}}},
		"target": {"type": "builtin", "name": "translate_text"}}`
	p := cl.post(base, url.Values{"declaration": {decl}})
	require.Equal(t, http.StatusSeeOther, p.Status, p.Body)
	page := cl.get(base)
	require.Contains(t, page.Body, "<code>translate</code>")

	// A refused save shows why, keeps the text, and stores nothing.
	bad := strings.Replace(decl, `"translate"`, `"has space"`, 1)
	p = cl.post(base, url.Values{"declaration": {bad}})
	require.Equal(t, http.StatusBadRequest, p.Status)
	require.Contains(t, p.Body, `role="alert"`)
	require.Contains(t, p.Body, "has space")
	var n int64
	require.NoError(t, c.Store.DB.Model(&models.AgentToolDeclaration{}).Where("agent_id = ?", c.Tenant.Agent.ID).Count(&n).Error)
	require.EqualValues(t, 1, n)
}

// TestTaskPageShowsToolCallsAndAnswersACard: a result's markdown is shown
// rendered safely; a pending card's button answers the call and releases
// the task's await once.
func TestTaskPageShowsToolCallsAndAnswersACard(t *testing.T) {
	t.Parallel()
	c := newTestConsole(t)
	cl := c.signedIn(t)
	caller := task.Caller{WorkspaceID: c.Tenant.Workspace.ID, AgentID: c.Tenant.Agent.ID, Actor: "agent"}
	tk, err := c.P.Tasks.Create(context.Background(), caller, task.TaskInput{Title: "Mail"})
	require.NoError(t, err)
	db := c.Store.DB
	now := time.Now().UTC()
	addCall := func(status string, result, card any) models.ToolCall {
		step := models.Step{ID: models.NewID(), TaskID: tk.ID, Kind: models.StepAgentTool, Status: models.StepCompleted, CreatedAt: now, UpdatedAt: now}
		require.NoError(t, db.Create(&step).Error)
		call := models.ToolCall{ID: models.NewID(), TaskID: tk.ID, StepID: step.ID, AgentID: c.Tenant.Agent.ID, Name: "search",
			Input: models.JSON(`{}`), Status: status, CreatedAt: now, UpdatedAt: now}
		if result != nil {
			call.Result = models.MustJSON(result)
		}
		if card != nil {
			call.Card = models.MustJSON(card)
		}
		require.NoError(t, db.Create(&call).Error)
		return call
	}
	addCall(models.ToolCallCompleted, agenttool.Reply{Content: "3 mails", Markdown: "**3** mails <img src=x onerror=alert(1)> [see](https://mail.example.com/) [here](/inbox)"}, nil)
	parked := addCall(models.ToolCallPendingInput, nil, agenttool.PendingInput{Type: "pending_input", Title: "Connect Gmail",
		Elements: []agenttool.Button{{Type: "button", ID: "skip", Label: "Not now", Input: []byte(`{"answer":"later"}`)}}})
	aw := models.TaskAwait{ID: models.NewID(), TaskID: tk.ID, SourceType: models.AwaitSourceToolCall, CorrelationKey: parked.StepID,
		Status: models.AwaitPending, CreatedAt: now}
	require.NoError(t, db.Create(&aw).Error)
	require.NoError(t, db.Model(&models.Task{}).Where("id = ?", tk.ID).Update("status", models.TaskWaitingForInput).Error)

	p := cl.get("/tasks/" + tk.ID)
	require.Equal(t, http.StatusOK, p.Status, p.Body)
	require.Contains(t, p.Body, "<strong>3</strong> mails &lt;img src=x onerror=alert(1)&gt;")
	require.Contains(t, p.Body, `<a href="https://mail.example.com/"`)
	require.Contains(t, p.Body, `<code class="dead-link">/inbox</code>`)
	require.NotContains(t, p.Body, "<img")
	require.Contains(t, p.Body, "Connect Gmail")
	require.Contains(t, p.Body, `data-button="skip"`)

	click := "/tasks/" + tk.ID + "/tool-calls/" + parked.ID + "/buttons/skip"
	p = cl.post(click, nil)
	require.Equal(t, http.StatusSeeOther, p.Status, p.Body)
	require.Equal(t, "/tasks/"+tk.ID+"?notice=answered", p.Header.Get("Location"))
	require.NoError(t, db.Where("id = ?", aw.ID).Take(&aw).Error)
	require.Equal(t, models.AwaitResolved, aw.Status)
	p = cl.post(click, nil)
	require.Equal(t, http.StatusConflict, p.Status, "a card is answered once")
	page := cl.get("/tasks/" + tk.ID)
	require.NotContains(t, page.Body, `data-button="skip"`, "an answered card shows no buttons")
	require.Contains(t, page.Body, `{&#34;answer&#34;:&#34;later&#34;}`)
}

// TestTaskAssetIsServedUnderItsOwnPolicy: only an asset a reply of the task
// shows, with the no-network policy, framable by the console only.
func TestTaskAssetIsServedUnderItsOwnPolicy(t *testing.T) {
	t.Parallel()
	c := newTestConsole(t)
	cl := c.signedIn(t)
	ctx := context.Background()
	caller := task.Caller{WorkspaceID: c.Tenant.Workspace.ID, AgentID: c.Tenant.Agent.ID, Actor: "agent"}
	tk, err := c.P.Tasks.Create(ctx, caller, task.TaskInput{Title: "Time"})
	require.NoError(t, err)
	html := []byte("<!doctype html><p>app</p>")
	shown, err := c.P.Replies.UploadAsset(ctx, caller, "text/html", html)
	require.NoError(t, err)
	hidden, err := c.P.Replies.UploadAsset(ctx, caller, "text/html", html)
	require.NoError(t, err)
	_, err = c.P.Replies.Post(ctx, caller, tk.ID, []byte(`{"final": true, "blocks": [{"type": "app", "asset_id": "`+shown.ID+`", "title": "T", "fallback": "F"}]}`))
	require.NoError(t, err)

	p := cl.get("/tasks/" + tk.ID + "/assets/" + shown.ID)
	require.Equal(t, http.StatusOK, p.Status, p.Body)
	require.Equal(t, string(html), p.Body)
	require.Equal(t, "text/html; charset=utf-8", p.Header.Get("Content-Type"))
	csp := p.Header.Get("Content-Security-Policy")
	require.Contains(t, csp, "connect-src 'none'")
	require.Contains(t, csp, "sandbox allow-scripts")
	require.Contains(t, csp, "frame-ancestors "+c.URL)
	require.Empty(t, p.Header.Get("X-Frame-Options"))
	require.Equal(t, http.StatusNotFound, cl.get("/tasks/"+tk.ID+"/assets/"+hidden.ID).Status, "an asset no reply shows is not served")
	require.Equal(t, http.StatusNotFound, cl.get("/tasks/"+models.NewID()+"/assets/"+shown.ID).Status)
}
