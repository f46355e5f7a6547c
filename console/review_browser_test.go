package console_test

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"

	"github.com/appruntime/appruntime/internal/document/documenttest"
	"github.com/appruntime/appruntime/internal/task"
	"github.com/appruntime/appruntime/internal/testkit/browser"
	"github.com/appruntime/appruntime/models"
)

// bridgeProbe is a bundle that shows what the host bridge tells it and
// sends bridge messages on its buttons; abort_review_task is not granted
// to it.
const bridgeProbe = `<!doctype html><html><body>
<p id="state">waiting</p><p id="selection"></p><p id="host-state"></p>
<button id="select">select</button><button id="next">next</button><button id="abort">abort</button>
<script>
window.addEventListener("message", (e) => {
  if (e.source !== parent) return;
  const m = e.data || {};
  if (m.type === "init") document.getElementById("state").textContent = "init:" + m.runtime.capabilities.join(",");
  if (m.type === "document_selection") document.getElementById("selection").textContent = m.page + ":" + m.text;
  if (m.type === "host_state") document.getElementById("host-state").textContent = m.selectionMode;
});
document.getElementById("select").onclick = () => parent.postMessage({ type: "set_selection_mode", enabled: true }, "*");
document.getElementById("next").onclick = () => parent.postMessage({ type: "request_next_review" }, "*");
document.getElementById("abort").onclick = () => parent.postMessage({ type: "abort_review_task" }, "*");
parent.postMessage({ type: "ready" }, "*");
</script></body></html>`

// TestReviewerHostInTheBrowser: a reviewer signs in, clicks "Review next",
// the artifact opens by itself, highlighting text in the viewer reaches the
// bundle (document_selection), the bundle's request_next_review lands on
// another task, and an ungranted message (abort_review_task) does nothing.
func TestReviewerHostInTheBrowser(t *testing.T) {
	t.Parallel()
	ctx := browser.New(t)
	s := newStack(t)
	f := seedDemo(t, s.P, s.Tenant)
	tool := newProbeTool(t, s, f, bridgeProbe, "document_selection", "next_review_task")
	first, second := tool.task(t, "Probe A", 10), tool.task(t, "Probe B", 9)
	// request_next_review asks while the reviewer holds the first task: the
	// claim limit (TestReviewPoolsPage) is not what this test is about.
	require.NoError(t, s.Store.DB.Model(&models.Workspace{}).Where("id = ?", s.Tenant.Workspace.ID).Update("review_claim_limit", 2).Error)

	location := reviewNextSignedIn(t, ctx, s, f.ReviewerEmail)
	require.Equal(t, s.URL+"/review/tasks/"+first, location, "the highest priority first")

	frame := browser.Frame(t, ctx, s.APIURL+"/bundles/"+tool.BundleID+"/")
	require.NoError(t, chromedp.Do(frame, browser.Poll(`document.querySelector("#state").textContent.startsWith("init:")`, 15*time.Second)))
	state, err := chromedp.Run(frame, chromedp.Text(chromedp.CSS(`#state`)))
	require.NoError(t, err)
	require.Equal(t, "init:file_preview,list_files,split_document,document_selection,next_review_task", state)

	// The artifact opened by itself, so "Open artifact" is hidden (the
	// stylesheet once kept it shown), and pressing it anyway mints no second
	// session (which would end the first).
	require.Equal(t, "none", browser.Eval[string](t, ctx, `getComputedStyle(document.getElementById("open-artifact")).display`))
	require.NoError(t, chromedp.Do(ctx, browser.Poll(`document.getElementById("bridge-status").textContent === "connected"`, 15*time.Second)))
	require.Equal(t, "connected", browser.Eval[string](t, ctx, `(() => { const b = document.getElementById("open-artifact");
		b.click(); b.click(); return document.getElementById("bridge-status").textContent; })()`), "a press that would mint shows opening… at once")
	var minted int64
	require.NoError(t, s.Store.DB.Model(&models.AppSession{}).Where("task_id = ?", first).Count(&minted).Error)
	require.EqualValues(t, 1, minted, "one session per page")

	// An ungranted message does nothing: the task stays claimed, the page stays.
	require.NoError(t, chromedp.Do(frame, chromedp.Click(chromedp.CSS(`#abort`))))
	time.Sleep(700 * time.Millisecond)
	location, err = chromedp.Run(ctx, chromedp.Location())
	require.NoError(t, err)
	require.Equal(t, s.URL+"/review/tasks/"+first, location)
	var held models.Task
	require.NoError(t, s.Store.DB.Where("id = ?", first).Take(&held).Error)
	require.NotNil(t, held.ClaimedBy, "abort_review_task is not granted: the claim stands")

	// The bundle asks for selections; the reviewer highlights text.
	require.NoError(t, chromedp.Do(frame,
		chromedp.Click(chromedp.CSS(`#select`)),
		browser.Poll(`document.querySelector("#host-state").textContent === "text"`, 10*time.Second),
	))
	_, err = chromedp.Run(ctx, chromedp.Evaluate[bool](`(() => {
		const el = document.querySelector('.document .page[data-page="1"] .page-text');
		const r = document.createRange(); r.selectNodeContents(el);
		const sel = getSelection(); sel.removeAllRanges(); sel.addRange(r);
		document.dispatchEvent(new MouseEvent("mouseup", { bubbles: true }));
		return true;
	})()`))
	require.NoError(t, err)
	require.NoError(t, chromedp.Do(frame, browser.Poll(`document.querySelector("#selection").textContent !== ""`, 10*time.Second)))
	selection, err := chromedp.Run(frame, chromedp.Text(chromedp.CSS(`#selection`)))
	require.NoError(t, err)
	require.True(t, strings.HasPrefix(selection, "1:Probe A page one"), selection)

	// request_next_review: the host claims the next task and opens it.
	require.NoError(t, chromedp.Do(frame, chromedp.Click(chromedp.CSS(`#next`))))
	require.Eventually(t, func() bool {
		loc, err := chromedp.Run(ctx, chromedp.Location())
		return err == nil && loc == s.URL+"/review/tasks/"+second
	}, 15*time.Second, 100*time.Millisecond, "the host opens the next task")
	var next models.Task
	require.NoError(t, s.Store.DB.Where("id = ?", second).Take(&next).Error)
	require.NotNil(t, next.ClaimedBy)
	require.Equal(t, *held.ClaimedBy, *next.ClaimedBy, "claimed for the same reviewer")
}

// probeTool is an app tool of the tenant's agent that mounts a probe
// bundle over the demo's data source with an await on review.
type probeTool struct {
	s        *stack
	ID       string
	BundleID string
}

// newProbeTool saves bundleHTML as a bundle and an await_review app tool
// whose binding grants capabilities (the demo's spec otherwise).
func newProbeTool(t *testing.T, s *stack, f fixture, bundleHTML string, capabilities ...string) probeTool {
	t.Helper()
	return newProbeToolWith(t, s, f, bundleHTML, probeOptions{Capabilities: capabilities})
}

// task creates a task of the given priority parked on the probe tool, with
// one document per entry of docs (a name and its pages' text); without
// docs, a two-page TITLE.pdf.
func (p probeTool) task(t *testing.T, title string, priority float64, docs ...probeDocument) string {
	t.Helper()
	bg := context.Background()
	caller := task.Caller{WorkspaceID: p.s.Tenant.Workspace.ID, AgentID: p.s.Tenant.Agent.ID, Actor: "agent:" + p.s.Tenant.Agent.ID}
	tk, err := p.s.P.Tasks.Create(bg, caller, task.TaskInput{Title: title, Priority: &priority})
	require.NoError(t, err)
	_, err = p.s.P.Tasks.AddAppToolStep(bg, caller, tk.ID, task.StepInput{ConfiguredToolID: p.ID})
	require.NoError(t, err)
	if len(docs) == 0 {
		docs = []probeDocument{{Name: title + ".pdf", Pages: []string{title + " page one", title + " page two"}}}
	}
	for _, d := range docs {
		_, err = p.s.P.Files.Upload(bg, tk.ID, d.Name, "", bytes.NewReader(documenttest.PDF(d.Pages...)))
		require.NoError(t, err)
	}
	return tk.ID
}

// probeDocument is a PDF of a probe task: its name and its pages' text.
type probeDocument struct {
	Name  string
	Pages []string
}

// reviewNextSignedIn signs the reviewer email in on the way to /review,
// clicks "Review next", waits for the artifact's frame and returns the
// page's location.
func reviewNextSignedIn(t *testing.T, ctx context.Context, s *stack, email string) string {
	t.Helper()
	require.NoError(t, chromedp.Do(ctx,
		chromedp.Navigate(s.URL+"/review"),
		chromedp.WaitVisible(chromedp.CSS(`input[name="email"]`)),
		chromedp.SendKeys(chromedp.CSS(`input[name="email"]`), email),
		chromedp.SendKeys(chromedp.CSS(`input[name="password"]`), testPassword),
		chromedp.Click(chromedp.CSS(`form button[type="submit"]`)),
		chromedp.WaitVisible(chromedp.CSS(`#review-next`)),
		chromedp.Click(chromedp.CSS(`#review-next`)),
		chromedp.WaitVisible(chromedp.CSS(`#artifact-frame`)),
	))
	location, err := chromedp.Run(ctx, chromedp.Location())
	require.NoError(t, err)
	return location
}
