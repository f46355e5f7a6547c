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

// TestAppBlocksOnTheTaskPage runs a real MCP App (internal/appblock's
// fixture, built from the published @modelcontextprotocol/ext-apps) as an
// agent's asset through the whole wiring: the agent uploads it three times
// and replies with three app blocks; the console's task page shows them
// with Run controls and runs none before Run; after Run the app shows the
// tool result, its fetch is blocked by the asset's policy, an open-link to
// http://127.0.0.1 is refused and an https one asks the person, ui/message
// fills the composer (and the person sends it as a task event), and a
// third app stops the first.
func TestAppBlocksOnTheTaskPage(t *testing.T) {
	t.Parallel()
	ctx := browser.New(t)
	s := newStack(t)
	app, err := os.ReadFile("../internal/appblock/testdata/mcp-app/app.html")
	require.NoError(t, err)
	caller := task.Caller{WorkspaceID: s.Tenant.Workspace.ID, AgentID: s.Tenant.Agent.ID, Actor: "agent:" + s.Tenant.Agent.ID}
	bg := context.Background()
	tk, err := s.P.Tasks.Create(bg, caller, task.TaskInput{Title: "What time is it?"})
	require.NoError(t, err)
	var assets []string
	for range 3 {
		a, err := s.P.Replies.UploadAsset(bg, caller, "text/html", app)
		require.NoError(t, err)
		assets = append(assets, a.ID)
	}
	block := func(asset, title, link, result string) map[string]any {
		b := map[string]any{"type": "app", "asset_id": asset, "title": title, "fallback": "Open on the web to run " + title + ".",
			"tool_result": map[string]any{"content": []any{map[string]any{"type": "text", "text": result}}}}
		if link != "" {
			b["tool_input"] = map[string]any{"link": link}
		}
		return b
	}
	blockA := block(assets[0], "App A", "http://127.0.0.1/", "14:32 +07:00")
	blockA["tool_result"].(map[string]any)["structured_content"] = map[string]any{"hour": 14}
	body, err := json.Marshal(map[string]any{"final": true, "blocks": []any{
		map[string]any{"type": "text", "text": "Here is the time."},
		blockA, block(assets[1], "App B", "https://example.com/docs", "result B"), block(assets[2], "App C", "", "result C"),
	}})
	require.NoError(t, err)
	_, err = s.P.Replies.Post(bg, caller, tk.ID, body)
	require.NoError(t, err)

	// Sign in and open the task page.
	require.NoError(t, chromedp.Do(ctx,
		chromedp.Navigate(s.URL+"/tasks/"+tk.ID),
		chromedp.WaitVisible(chromedp.CSS(`input[name="email"]`)),
		chromedp.SendKeys(chromedp.CSS(`input[name="email"]`), s.Tenant.Admin.Email),
		chromedp.SendKeys(chromedp.CSS(`input[name="password"]`), testPassword),
		chromedp.Click(chromedp.CSS(`form button[type="submit"]`)),
		chromedp.WaitVisible(chromedp.CSS(`section[data-asset="`+assets[2]+`"] button.app-run`)),
	))
	sel := func(i int) string { return `section[data-asset="` + assets[i] + `"]` }

	// Nothing runs before Run; the person's confirmations are recorded and declined.
	require.Equal(t, 0, browser.Eval[int](t, ctx, `document.querySelectorAll("iframe").length`))
	require.Equal(t, "App A", browser.Eval[string](t, ctx, `document.querySelector('`+sel(0)+` .app-title').textContent`))
	require.NoError(t, chromedp.Do(ctx, chromedp.Evaluate[chromedp.Void](
		`window.confirmAsked = []; window.confirm = (m) => { window.confirmAsked.push(m); return false; }`)))

	// Run App A: the handshake, then the tool input and result.
	require.NoError(t, chromedp.Do(ctx, browser.RunApp(assets[0])))
	frameA := browser.Frame(t, ctx, s.URL+"/tasks/"+tk.ID+"/assets/"+assets[0])
	require.NoError(t, chromedp.Do(frameA,
		browser.WaitText("#result", `t === "14:32 +07:00"`),
		browser.WaitText("#status", `t === "connected to appruntime"`),
		browser.WaitText("#structured", `t === 'structured: {"hour":14}'`),
	))
	require.NoError(t, chromedp.Do(ctx, browser.WaitSteady(`section[data-asset="`+assets[0]+`"] iframe`)))

	// While it runs its Run control is hidden (the stylesheet once kept it
	// shown), and a press on it anyway mounts no second copy.
	require.Equal(t, "none", browser.Eval[string](t, ctx, `getComputedStyle(document.querySelector('`+sel(0)+` button.app-run')).display`))
	require.NoError(t, chromedp.Do(ctx, browser.RunApp(assets[0]), browser.RunApp(assets[0])))
	require.Equal(t, 1, browser.Eval[int](t, ctx, `document.querySelectorAll('`+sel(0)+` iframe').length`))

	// Its notifications/message logs show in a collapsible log under it,
	// as text (the host advertises logging).
	require.Equal(t, "none", browser.Eval[string](t, ctx, `getComputedStyle(document.querySelector('`+sel(0)+` details.app-log')).display`), "no log before the first line")
	require.NoError(t, chromedp.Do(frameA, chromedp.Evaluate[chromedp.Void](`parent.postMessage({jsonrpc: "2.0", method: "notifications/message",
		params: {level: "warning", logger: "fixture", data: "<b>low</b> stock"}}, "*");
		parent.postMessage({jsonrpc: "2.0", method: "notifications/message", params: {level: "info", data: {n: 2}}}, "*")`)))
	require.NoError(t, chromedp.Do(ctx, browser.WaitText(sel(0)+` details.app-log summary`, `t === "App log (2)"`)))
	require.Equal(t, []string{"warning fixture: <b>low</b> stock", `info {"n":2}`},
		browser.Eval[[]string](t, ctx, `[...document.querySelectorAll('`+sel(0)+` details.app-log li')].map(li => li.textContent)`))
	require.Zero(t, browser.Eval[int](t, ctx, `document.querySelectorAll('`+sel(0)+` details.app-log b').length`), "a log line is text, never markup")

	// Its fetch is blocked by the asset's policy.
	require.NoError(t, chromedp.Do(frameA,
		browser.Press("#fetch"),
		browser.WaitText("#fetch-status", `t === "fetch: blocked by CSP (connect-src)"`),
	))

	// An open-link to http://127.0.0.1 is refused without asking the person.
	require.NoError(t, chromedp.Do(frameA,
		browser.Press("#open"),
		browser.WaitText("#open-status", `t === "open-link: refused http://127.0.0.1/"`),
	))
	require.Equal(t, 0, browser.Eval[int](t, ctx, `window.confirmAsked.length`))

	// ui/message fills the composer and sends nothing; tools/call is refused.
	require.NoError(t, chromedp.Do(frameA,
		browser.Press("#message"),
		browser.WaitText("#message-status", `t === "message: accepted"`),
		browser.Press("#tool"),
		browser.WaitText("#tool-status", `t.startsWith("tools/call: refused: ")`),
	))
	// The final reply completed the task, so the page has no composer for
	// the message to fill, and says why.
	require.Equal(t, 0, browser.Eval[int](t, ctx, `document.querySelectorAll("#composer").length`))
	require.Contains(t, browser.Eval[string](t, ctx, `document.getElementById("composer-closed").textContent`), "The task is completed")
	var messages int64
	require.NoError(t, s.Store.DB.Model(&models.FeedEvent{}).Where("task_id = ? AND type = ?", tk.ID, models.FeedUserMessage).Count(&messages).Error)
	require.Zero(t, messages, "ui/message sends nothing")

	// Run App B: an https link asks the person (who declines here).
	require.NoError(t, chromedp.Do(ctx, browser.RunApp(assets[1])))
	frameB := browser.Frame(t, ctx, s.URL+"/tasks/"+tk.ID+"/assets/"+assets[1])
	require.NoError(t, chromedp.Do(frameB, browser.WaitText("#result", `t === "result B"`)))
	require.NoError(t, chromedp.Do(ctx, browser.WaitSteady(`section[data-asset="`+assets[1]+`"] iframe`)))
	require.NoError(t, chromedp.Do(frameB,
		browser.Press("#open"),
		browser.WaitText("#open-status", `t === "open-link: refused https://example.com/docs"`),
	))
	asked := browser.Eval[[]string](t, ctx, `window.confirmAsked`)
	require.Len(t, asked, 1)
	require.Contains(t, asked[0], "https://example.com/docs")

	// A third app stops the oldest, which shows its Run control again.
	require.Equal(t, 2, browser.Eval[int](t, ctx, `document.querySelectorAll("iframe").length`))
	require.NoError(t, chromedp.Do(ctx,
		browser.RunApp(assets[2]),
		chromedp.WaitVisible(chromedp.CSS(sel(0)+` button.app-run`)),
	))
	frameC := browser.Frame(t, ctx, s.URL+"/tasks/"+tk.ID+"/assets/"+assets[2])
	require.NoError(t, chromedp.Do(frameC, browser.WaitText("#result", `t === "result C"`)))
	require.Equal(t, []string{"stopped", "running", "running"},
		browser.Eval[[]string](t, ctx, `[...document.querySelectorAll("section.app-block")].map(s => s.dataset.state)`))
	require.Equal(t, 2, browser.Eval[int](t, ctx, `document.querySelectorAll("iframe").length`))

	require.NoError(t, s.Store.DB.Model(&models.FeedEvent{}).Where("task_id = ? AND type = ?", tk.ID, models.FeedUserMessage).Count(&messages).Error)
	require.Zero(t, messages, "no message on a finished task")
}
