package console_test

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"

	"github.com/appruntime/appruntime/internal/bindingspec"
	"github.com/appruntime/appruntime/internal/bundle"
	"github.com/appruntime/appruntime/internal/demo"
	"github.com/appruntime/appruntime/internal/outbox"
	"github.com/appruntime/appruntime/internal/review"
	"github.com/appruntime/appruntime/internal/sdk"
	"github.com/appruntime/appruntime/internal/testkit/browser"
	"github.com/appruntime/appruntime/internal/toolconfig"
	"github.com/appruntime/appruntime/models"
)

// probeOptions adjust newProbeToolWith's binding and tool.
type probeOptions struct {
	Capabilities []string
	Spec         func(*bindingspec.Spec)
	Tool         func(*toolconfig.Input)
}

// newProbeToolWith is newProbeTool with the binding's spec and the tool's
// input adjusted by o.
func newProbeToolWith(t *testing.T, s *stack, f fixture, bundleHTML string, o probeOptions) probeTool {
	t.Helper()
	bg := context.Background()
	ws, actor := s.Tenant.Workspace.ID, "user:"+s.Tenant.Admin.ID
	spec := demo.Spec()
	spec.Capabilities = o.Capabilities
	if o.Spec != nil {
		o.Spec(&spec)
	}
	raw, err := json.Marshal(spec)
	require.NoError(t, err)
	b, err := s.P.Bindings.Create(bg, ws, actor, bindingspec.Input{Name: "probe binding", BindingKind: bindingspec.KindPostgres,
		IntegrationID: f.IntegrationID, AllowedOperations: raw})
	require.NoError(t, err)
	bv, err := s.P.Bundles.Create(bg, ws, actor, bundle.Upload{Name: "bridge-probe", ContentType: "text/html", Content: []byte(bundleHTML)})
	require.NoError(t, err)
	in := toolconfig.Input{AgentID: s.Tenant.Agent.ID, DisplayName: "Bridge probe",
		BaseTool: models.BaseAppTool, BundleID: &bv.ID, BindingID: &b.ID, AwaitReview: true}
	if o.Tool != nil {
		o.Tool(&in)
	}
	tool, err := s.P.Tools.Create(bg, ws, actor, in)
	require.NoError(t, err)
	return probeTool{s: s, ID: tool.ID, BundleID: bv.ID}
}

// isFullscreen reads whether the reviewer's page shows the artifact full screen.
const isFullscreen = `document.getElementById("artifact-section").classList.contains("fullscreen")`

// waitConnected waits until the host page handed the bundle its init.
func waitConnected(t *testing.T, ctx context.Context) {
	t.Helper()
	require.NoError(t, chromedp.Do(ctx, browser.Poll(`document.getElementById("bridge-status").textContent === "connected"`, 20*time.Second)))
}

// TestDefaultFullscreenYieldsToTheReviewersChoice: seed 000's
// default_fullscreen opens the artifact full screen on its first render,
// but the reviewer's own expand/collapse is pinned and wins afterwards: a
// reload of the page (as after the task's status changed) mounts the
// artifact again without stealing the screen back, and a reviewer who
// chose full screen before opening keeps it on a task whose tool does not
// ask for it.
func TestDefaultFullscreenYieldsToTheReviewersChoice(t *testing.T) {
	t.Parallel()
	ctx := browser.New(t)
	s := newStack(t)
	f := seedDemo(t, s.P, s.Tenant)
	tool := newProbeToolWith(t, s, f, bridgeProbe, probeOptions{Tool: func(in *toolconfig.Input) { in.DefaultFullscreen = true }})
	first := tool.task(t, "Fullscreen A", 10)

	location := reviewNextSignedIn(t, ctx, s, f.ReviewerEmail)
	require.Equal(t, s.URL+"/review/tasks/"+first, location)
	waitConnected(t, ctx)
	require.True(t, browser.Eval[bool](t, ctx, isFullscreen), "default_fullscreen opens it full screen")

	// The reviewer leaves full screen: that choice is pinned.
	require.NoError(t, chromedp.Do(ctx, chromedp.Click(chromedp.CSS(`#toggle-fullscreen`))))
	require.False(t, browser.Eval[bool](t, ctx, isFullscreen))
	require.NoError(t, chromedp.Do(ctx, chromedp.Reload(), chromedp.WaitVisible(chromedp.CSS(`#artifact-frame`))))
	waitConnected(t, ctx)
	require.False(t, browser.Eval[bool](t, ctx, isFullscreen), "a remount does not steal back the screen the reviewer took")
	require.Equal(t, "Full screen", browser.Eval[string](t, ctx, `document.getElementById("toggle-fullscreen").textContent`))

	// The choice is the reviewer's either way: expanding it again holds too.
	require.NoError(t, chromedp.Do(ctx, chromedp.Click(chromedp.CSS(`#toggle-fullscreen`))))
	require.NoError(t, chromedp.Do(ctx, chromedp.Reload(), chromedp.WaitVisible(chromedp.CSS(`#artifact-frame`))))
	waitConnected(t, ctx)
	require.True(t, browser.Eval[bool](t, ctx, isFullscreen))
	require.Equal(t, "Leave full screen", browser.Eval[string](t, ctx, `document.getElementById("toggle-fullscreen").textContent`))
}

// TestTheArtifactOpensByItselfOnlyWhileItsAwaitIsPending: seed 000's feed
// auto-opens the artifact while the await is pending. A task whose tool
// parks nothing shows "Open artifact" and mints nothing until pressed; a
// parked task's page mounts the bundle at once.
func TestTheArtifactOpensByItselfOnlyWhileItsAwaitIsPending(t *testing.T) {
	t.Parallel()
	ctx := browser.New(t)
	s := newStack(t)
	f := seedDemo(t, s.P, s.Tenant)
	parked := newProbeTool(t, s, f, bridgeProbe)
	notParked := newProbeToolWith(t, s, f, bridgeProbe, probeOptions{Tool: func(in *toolconfig.Input) { in.AwaitReview, in.DisplayName = false, "Unparked probe" }})
	pending, done := parked.task(t, "Pending", 1), notParked.task(t, "Not pending", 1)
	minted := func(taskID string) (n int64) {
		require.NoError(t, s.Store.DB.Model(&models.AppSession{}).Where("task_id = ?", taskID).Count(&n).Error)
		return n
	}

	// An admin may look at any task's reviewer page.
	signInAt(t, ctx, s, "/review/tasks/"+done, `#open-artifact`)
	time.Sleep(700 * time.Millisecond)
	require.True(t, browser.Eval[bool](t, ctx, `document.getElementById("artifact-frame").hidden`), "not pending: nothing mounts by itself")
	require.Equal(t, "closed", browser.Eval[string](t, ctx, `document.getElementById("bridge-status").textContent`))
	require.Zero(t, minted(done), "nor is a session minted")
	require.NoError(t, chromedp.Do(ctx, chromedp.Click(chromedp.CSS(`#open-artifact`))))
	waitConnected(t, ctx)
	require.EqualValues(t, 1, minted(done), "pressed: it opens")

	require.NoError(t, chromedp.Do(ctx, chromedp.Navigate(s.URL+"/review/tasks/"+pending), chromedp.WaitVisible(chromedp.CSS(`#artifact-frame`))))
	waitConnected(t, ctx)
	require.Equal(t, "none", browser.Eval[string](t, ctx, `getComputedStyle(document.getElementById("open-artifact")).display`))
	require.EqualValues(t, 1, minted(pending), "pending: it opened by itself")
}

// TestTheHostMountsTheLiveDescriptor: seed 000's host prefers the live
// descriptor to the one recorded when the artifact was built. After the
// task parked, the admin uploads a new bundle version and turns
// default_fullscreen on; the artifact feed event still records version 1
// without full screen, and the reviewer's page mounts version 2 full screen.
func TestTheHostMountsTheLiveDescriptor(t *testing.T) {
	t.Parallel()
	ctx := browser.New(t)
	s := newStack(t)
	f := seedDemo(t, s.P, s.Tenant)
	tool := newProbeTool(t, s, f, strings.Replace(bridgeProbe, `<p id="state">`, `<p id="version">one</p><p id="state">`, 1))
	first := tool.task(t, "Live", 10)

	var snapshot models.FeedEvent
	require.NoError(t, s.Store.DB.Where("task_id = ? AND type = ?", first, models.FeedArtifact).Take(&snapshot).Error)
	var recorded struct {
		BundleVersion     int  `json:"bundle_version"`
		DefaultFullscreen bool `json:"default_fullscreen"`
	}
	require.NoError(t, snapshot.Payload.Decode(&recorded))
	require.Equal(t, 1, recorded.BundleVersion)
	require.False(t, recorded.DefaultFullscreen)

	bg := context.Background()
	ws, actor := s.Tenant.Workspace.ID, "user:"+s.Tenant.Admin.ID
	_, err := s.P.Bundles.AddVersion(bg, ws, actor, tool.BundleID, bundle.Upload{ContentType: "text/html",
		Content: []byte(strings.Replace(bridgeProbe, `<p id="state">`, `<p id="version">two</p><p id="state">`, 1))})
	require.NoError(t, err)
	_, err = s.P.Tools.Update(bg, ws, actor, tool.ID, []byte(`{"default_fullscreen": true}`))
	require.NoError(t, err)

	location := reviewNextSignedIn(t, ctx, s, f.ReviewerEmail)
	require.Equal(t, s.URL+"/review/tasks/"+first, location)
	waitConnected(t, ctx)
	require.Equal(t, s.APIURL+"/bundles/"+tool.BundleID+"/2", browser.Eval[string](t, ctx, `document.getElementById("artifact-frame").src`))
	frame := browser.Frame(t, ctx, s.APIURL+"/bundles/"+tool.BundleID+"/")
	version, err := chromedp.Run(frame, chromedp.Text(chromedp.CSS(`#version`)))
	require.NoError(t, err)
	require.Equal(t, "two", version, "the live bundle version")
	require.True(t, browser.Eval[bool](t, ctx, isFullscreen), "the live default_fullscreen")
}

// reasonProbe is a bundle on the SDK that approves with an action the
// binding declares reason_required, without a reason of its own.
const reasonProbe = `<!doctype html><html><body>
<p id="state">waiting</p><p id="result"></p><button id="approve">approve</button>
<script type="module">
import { connect } from "SDK_URL";
const app = await connect();
document.getElementById("state").textContent = "connected:" + (app.runtime.reason_required || []).join(",");
document.getElementById("approve").onclick = async () => {
  const out = document.getElementById("result");
  out.textContent = "calling";
  try {
    const r = await app.action("approve_probe", { rows: { record_decision: { decision: "approved" } } }, { awaitId: app.awaitId });
    out.textContent = "resolved:" + r.results.await_resolved;
  } catch (err) {
    out.textContent = "error:" + err.status + ":" + err.message;
  }
};
</script></body></html>`

// TestTheReviewerIsAskedForTheReasonAnActionRequires is issue 29 §3 on the
// reviewer's host page: the bundle calls an action the binding declares
// reason_required without a reason; the SDK asks the host
// (request_reason), the page shows a dialog naming the action, a cancel
// refuses the call (nothing written, the await still pending), and the
// reason typed next goes with the call and reaches the resume event's
// decision; the console's task page then shows the outcome and the reason.
func TestTheReviewerIsAskedForTheReasonAnActionRequires(t *testing.T) {
	t.Parallel()
	ctx := browser.New(t)
	s := newStack(t)
	startWorker(t, s)
	f := seedDemo(t, s.P, s.Tenant)
	tool := newProbeToolWith(t, s, f, strings.ReplaceAll(reasonProbe, "SDK_URL", s.APIURL+sdk.Path), probeOptions{Spec: func(sp *bindingspec.Spec) {
		sp.Actions = append(sp.Actions, bindingspec.Action{Name: "approve_probe", Writes: []string{"record_decision"},
			ResolvesAwait: true, Outcome: bindingspec.OutcomeApprove, ReasonRequired: true})
	}})
	first := tool.task(t, "Reason", 10)
	decisions := func() (n int64) {
		require.NoError(t, f.Source.DB.Raw(`SELECT count(*) FROM decisions WHERE task_id = ?`, first).Scan(&n).Error)
		return n
	}

	location := reviewNextSignedIn(t, ctx, s, f.ReviewerEmail)
	require.Equal(t, s.URL+"/review/tasks/"+first, location)
	frame := browser.Frame(t, ctx, s.APIURL+"/bundles/"+tool.BundleID+"/")
	require.NoError(t, chromedp.Do(frame, browser.Poll(`document.querySelector("#state").textContent.startsWith("connected:")`, 20*time.Second)))
	state, err := chromedp.Run(frame, chromedp.Text(chromedp.CSS(`#state`)))
	require.NoError(t, err)
	require.Equal(t, "connected:approve_probe", state, "the mint names the actions requiring a reason")
	dialogOpen := `document.getElementById("reason-dialog").open`

	// Cancelled: the call is refused in the bundle, nothing is written.
	require.NoError(t, chromedp.Do(frame, chromedp.Click(chromedp.CSS(`#approve`))))
	require.NoError(t, chromedp.Do(ctx, browser.Poll(dialogOpen, 15*time.Second)))
	require.Equal(t, "approve_probe", browser.Eval[string](t, ctx, `document.getElementById("reason-action").textContent`))
	require.NoError(t, chromedp.Do(ctx, chromedp.Click(chromedp.CSS(`#reason-cancel`))))
	require.NoError(t, chromedp.Do(frame, browser.Poll(`document.querySelector("#result").textContent.startsWith("error:")`, 15*time.Second)))
	result, err := chromedp.Run(frame, chromedp.Text(chromedp.CSS(`#result`)))
	require.NoError(t, err)
	require.Equal(t, "error:400:the reviewer gave no reason for approve_probe", result)
	require.Zero(t, decisions())
	var aw models.TaskAwait
	require.NoError(t, s.Store.DB.Where("task_id = ?", first).Take(&aw).Error)
	require.Equal(t, models.AwaitPending, aw.Status)

	// Typed and sent: the reason goes with the call.
	const reason = "matches the purchase order"
	require.NoError(t, chromedp.Do(frame, chromedp.Click(chromedp.CSS(`#approve`))))
	require.NoError(t, chromedp.Do(ctx, browser.Poll(dialogOpen, 15*time.Second)))
	require.Empty(t, browser.Eval[string](t, ctx, `document.getElementById("reason-text").value`), "the dialog starts empty")
	require.NoError(t, chromedp.Do(ctx,
		chromedp.SendKeys(chromedp.CSS(`#reason-text`), reason),
		chromedp.Click(chromedp.CSS(`#reason-send`)),
	))
	require.NoError(t, chromedp.Do(frame, browser.Poll(`document.querySelector("#result").textContent.startsWith("resolved:")`, 20*time.Second)))
	result, err = chromedp.Run(frame, chromedp.Text(chromedp.CSS(`#result`)))
	require.NoError(t, err)
	require.Equal(t, "resolved:true", result)
	require.False(t, browser.Eval[bool](t, ctx, dialogOpen))
	require.EqualValues(t, 1, decisions())

	var row models.Outbox
	require.NoError(t, s.Store.DB.Where("kind = ? AND payload ->> 'await_id' = ?", outbox.KindResumeEvent, aw.ID).Take(&row).Error)
	var ev review.ResumePayload
	require.NoError(t, row.Payload.Decode(&ev))
	require.NotNil(t, ev.Decision)
	require.Equal(t, reason, ev.Decision.Reason, "the typed reason reaches the resume event")
	require.Equal(t, bindingspec.OutcomeApprove, ev.Decision.Outcome)

	// The worker relays the resume; the task page shows the decision.
	admin := s.signedIn(t)
	require.Eventually(t, func() bool {
		page := admin.get("/tasks/" + first)
		return page.Status == http.StatusOK && strings.Contains(page.Body, `<span class="outcome outcome-approve">outcome: approve</span>`) &&
			strings.Contains(page.Body, reason)
	}, 30*time.Second, 200*time.Millisecond, "the task page shows the outcome and the reason")
}
