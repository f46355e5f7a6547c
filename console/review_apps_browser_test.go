package console_test

import (
	"context"
	"encoding/json"
	"os"
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"

	"github.com/appruntime/appruntime/internal/task"
	"github.com/appruntime/appruntime/internal/testkit/browser"
	"github.com/appruntime/appruntime/models"
)

// TestAppBlocksOnTheReviewPage runs the real MCP App fixture (built from
// the published @modelcontextprotocol/ext-apps) on the reviewer's host
// page: the agent of a parked task gives its final reply with three app
// blocks (the task stays parked for the reviewer) after a partial one; the
// reviewer claims the task and sees the final reply's blocks with Run
// controls, nothing running before Run, beside the artifact; after Run the
// app shows its tool result from the reviewer's asset route, its fetch is
// blocked, an open-link to http://127.0.0.1 is refused, ui/message fills
// the reviewer's composer and sends nothing until the reviewer sends it,
// and a third app stops the first.
func TestAppBlocksOnTheReviewPage(t *testing.T) {
	t.Parallel()
	ctx := browser.New(t)
	s := newStack(t)
	f := seedDemo(t, s.P, s.Tenant)
	app, err := os.ReadFile("../internal/appblock/testdata/mcp-app/app.html")
	require.NoError(t, err)
	caller := task.Caller{WorkspaceID: s.Tenant.Workspace.ID, AgentID: s.Tenant.Agent.ID, Actor: "agent:" + s.Tenant.Agent.ID}
	bg := context.Background()
	var assets []string
	for range 3 {
		a, err := s.P.Replies.UploadAsset(bg, caller, "text/html", app)
		require.NoError(t, err)
		assets = append(assets, a.ID)
	}
	block := func(asset, title, result string) map[string]any {
		return map[string]any{"type": "app", "asset_id": asset, "title": title, "fallback": "Open on the web to run " + title + ".",
			"tool_input":  map[string]any{"link": "http://127.0.0.1/"},
			"tool_result": map[string]any{"content": []any{map[string]any{"type": "text", "text": result}}}}
	}
	_, err = s.P.Replies.Post(bg, caller, f.TaskID, []byte(`{"final": false, "blocks": [{"type": "text", "text": "Still reading the invoices."}]}`))
	require.NoError(t, err)
	body, err := json.Marshal(map[string]any{"final": true, "blocks": []any{
		map[string]any{"type": "text", "text": "Totals by vendor are below."},
		block(assets[0], "App A", "ACME 1339.90"), block(assets[1], "App B", "result B"), block(assets[2], "App C", "result C"),
	}})
	require.NoError(t, err)
	v, err := s.P.Replies.Post(bg, caller, f.TaskID, body)
	require.NoError(t, err)
	require.Equal(t, models.TaskWaitingForInput, v.TaskStatus, "a final reply leaves a parked task to its await")

	// The reviewer signs in and claims the task.
	require.NoError(t, chromedp.Do(ctx,
		chromedp.Navigate(s.URL+"/review"),
		chromedp.WaitVisible(chromedp.CSS(`input[name="email"]`)),
		chromedp.SendKeys(chromedp.CSS(`input[name="email"]`), f.ReviewerEmail),
		chromedp.SendKeys(chromedp.CSS(`input[name="password"]`), testPassword),
		chromedp.Click(chromedp.CSS(`form button[type="submit"]`)),
		chromedp.WaitVisible(chromedp.CSS(`#review-next`)),
		chromedp.Click(chromedp.CSS(`#review-next`)),
		chromedp.WaitVisible(chromedp.CSS(`section[data-asset="`+assets[2]+`"] button.app-run`)),
	))
	location, err := chromedp.Run(ctx, chromedp.Location())
	require.NoError(t, err)
	require.Equal(t, s.URL+"/review/tasks/"+f.TaskID, location)
	sel := func(i int) string { return `section[data-asset="` + assets[i] + `"]` }

	// The final reply only; nothing of it runs before Run.
	require.Equal(t, "Totals by vendor are below.", browser.Eval[string](t, ctx, `document.querySelector("#replies .reply-text").textContent`))
	require.False(t, browser.Eval[bool](t, ctx, `document.getElementById("replies").textContent.includes("Still reading")`), "a partial reply is not shown")
	require.Equal(t, 0, browser.Eval[int](t, ctx, `document.querySelectorAll("section.app-block iframe").length`))
	require.NoError(t, chromedp.Do(ctx, chromedp.Evaluate[chromedp.Void](
		`window.confirmAsked = []; window.confirm = (m) => { window.confirmAsked.push(m); return false; }`)))

	// Run App A: the tool result, the blocked fetch, the refused link, the message.
	require.NoError(t, chromedp.Do(ctx, browser.RunApp(assets[0])))
	// The app blocks sit below the artifact: the reviewer scrolls to them.
	require.NoError(t, chromedp.Do(ctx, chromedp.Evaluate[chromedp.Void](`document.querySelector('`+sel(0)+`').scrollIntoView()`)))
	frameA := browser.Frame(t, ctx, s.URL+"/review/tasks/"+f.TaskID+"/assets/"+assets[0])
	require.NoError(t, chromedp.Do(frameA,
		browser.WaitText("#result", `t === "ACME 1339.90"`),
		browser.WaitText("#status", `t === "connected to appruntime"`),
	))
	require.NoError(t, chromedp.Do(ctx, browser.WaitSteady(sel(0)+" iframe")))
	require.NoError(t, chromedp.Do(frameA,
		browser.Press("#fetch"),
		browser.WaitText("#fetch-status", `t === "fetch: blocked by CSP (connect-src)"`),
		browser.Press("#open"),
		browser.WaitText("#open-status", `t === "open-link: refused http://127.0.0.1/"`),
		browser.Press("#message"),
		browser.WaitText("#message-status", `t === "message: accepted"`),
	))
	require.Equal(t, 0, browser.Eval[int](t, ctx, `window.confirmAsked.length`))
	require.Equal(t, "Hello from the app", browser.Eval[string](t, ctx, `document.getElementById("composer").value`))
	var messages int64
	require.NoError(t, s.Store.DB.Model(&models.FeedEvent{}).Where("task_id = ? AND type = ?", f.TaskID, models.FeedUserMessage).Count(&messages).Error)
	require.Zero(t, messages, "ui/message sends nothing")

	// Two more apps: the third stops the oldest.
	require.NoError(t, chromedp.Do(ctx, browser.RunApp(assets[1])))
	frameB := browser.Frame(t, ctx, s.URL+"/review/tasks/"+f.TaskID+"/assets/"+assets[1])
	require.NoError(t, chromedp.Do(frameB, browser.WaitText("#result", `t === "result B"`)))
	require.NoError(t, chromedp.Do(ctx,
		browser.RunApp(assets[2]),
		chromedp.WaitVisible(chromedp.CSS(sel(0)+` button.app-run`)),
	))
	require.Equal(t, []string{"stopped", "running", "running"},
		browser.Eval[[]string](t, ctx, `[...document.querySelectorAll("section.app-block")].map(s => s.dataset.state)`))

	// The reviewer sends the composer's text: a task event the agent reads,
	// and the task stays the reviewer's.
	require.NoError(t, chromedp.Do(ctx,
		chromedp.Click(chromedp.CSS(`form.composer button[type="submit"]`)),
		chromedp.WaitVisible(chromedp.CSS(`p.notice`)),
	))
	location, err = chromedp.Run(ctx, chromedp.Location())
	require.NoError(t, err)
	require.Equal(t, s.URL+"/review/tasks/"+f.TaskID+"?notice=message_sent", location)
	var ev models.FeedEvent
	require.NoError(t, s.Store.DB.Where("task_id = ? AND type = ?", f.TaskID, models.FeedUserMessage).Take(&ev).Error)
	require.JSONEq(t, `{"text": "Hello from the app"}`, string(ev.Payload))
	var reviewer models.User
	require.NoError(t, s.Store.DB.Where("email = ?", f.ReviewerEmail).Take(&reviewer).Error)
	require.Equal(t, "user:"+reviewer.ID, ev.Actor)
}
