package console_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"

	"github.com/appruntime/appruntime/internal/agenttool"
	"github.com/appruntime/appruntime/internal/task"
	"github.com/appruntime/appruntime/internal/testkit/browser"
	"github.com/appruntime/appruntime/models"
)

// heightPage is an embedded page of seed 003: it posts the height its
// parent's "grow" message names as {__kazzle_height: n}.
const heightPage = `<!doctype html><html><body style="margin:0"><p id="ready">ready</p>
<script>
addEventListener("message", (e) => {
  if (e.data && typeof e.data.grow === "number") parent.postMessage({ __kazzle_height: e.data.grow }, "*");
});
</script></body></html>`

// TestAnEmbeddedPageSizesItsFrame is seed 003's embedded page height
// message on the console's task page: a tool result's embedUrl page (a
// loopback https server standing in for the app's component) posts
// {__kazzle_height: n}; its frame grows to n, and to 70 % of the viewport
// at most; a message of another window, or not a number, changes nothing.
func TestAnEmbeddedPageSizesItsFrame(t *testing.T) {
	t.Parallel()
	app := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		_, _ = w.Write([]byte(heightPage))
	}))
	t.Cleanup(app.Close)
	ctx := browser.New(t, browser.TrustCertificate(app.Certificate()))
	s := newStack(t)
	caller := task.Caller{WorkspaceID: s.Tenant.Workspace.ID, AgentID: s.Tenant.Agent.ID, Actor: "agent:" + s.Tenant.Agent.ID}
	tk, err := s.P.Tasks.Create(context.Background(), caller, task.TaskInput{Title: "Connect Gmail"})
	require.NoError(t, err)
	now := time.Now()
	step := models.Step{ID: models.NewID(), TaskID: tk.ID, Kind: models.StepAgentTool, Status: models.StepCompleted,
		Input: models.MustJSON(map[string]any{}), CreatedAt: now, UpdatedAt: now}
	require.NoError(t, s.Store.DB.Create(&step).Error)
	embedURL := app.URL + "/connect"
	require.NoError(t, s.Store.DB.Create(&models.ToolCall{ID: models.NewID(), TaskID: tk.ID, StepID: step.ID, AgentID: s.Tenant.Agent.ID,
		Name: "connect_gmail", Input: models.MustJSON(map[string]any{}), Status: "completed",
		Result:    models.MustJSON(agenttool.Reply{Content: "Gmail is not connected yet.", EmbedURL: embedURL}),
		CreatedAt: now, UpdatedAt: now}).Error)

	signInAt(t, ctx, s, "/tasks/"+tk.ID, `iframe.tool-embed`)
	require.NoError(t, chromedp.Do(ctx, chromedp.EmulateViewport(1200, 1000)))
	frame := browser.Frame(t, ctx, embedURL)
	require.NoError(t, chromedp.Do(frame, chromedp.WaitVisible(chromedp.CSS(`#ready`))))
	height := func() int {
		return browser.Eval[int](t, ctx, `Math.round(document.querySelector("iframe.tool-embed").getBoundingClientRect().height)`)
	}
	grow := func(n any) {
		require.NoError(t, chromedp.Do(frame, chromedp.Evaluate[chromedp.Void](fmt.Sprintf(`dispatchEvent(new MessageEvent("message", {data: {grow: %v}}))`, n))))
	}
	before := height()
	require.NotEqual(t, 420, before)

	grow(420)
	require.NoError(t, chromedp.Do(ctx, browser.Poll(`Math.round(document.querySelector("iframe.tool-embed").getBoundingClientRect().height) === 420`, 10*time.Second)),
		"the frame grows to the height the page posts")

	innerHeight := browser.Eval[int](t, ctx, `innerHeight`)
	capped := innerHeight * 7 / 10
	grow(5000)
	require.NoError(t, chromedp.Do(ctx, browser.Poll(fmt.Sprintf(`Math.round(document.querySelector("iframe.tool-embed").getBoundingClientRect().height) === %d`, capped), 10*time.Second)),
		"capped at 70 %% of the viewport (%d of %d)", capped, innerHeight)

	// Not the frame's window, or not a number: nothing changes.
	require.NoError(t, chromedp.Do(ctx, chromedp.Evaluate[chromedp.Void](`postMessage({ __kazzle_height: 300 }, "*")`)))
	grow(`"300"`)
	time.Sleep(700 * time.Millisecond)
	require.Equal(t, capped, height())
}
