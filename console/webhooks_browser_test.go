package console_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"

	"github.com/appruntime/appruntime/internal/testkit/browser"
	"github.com/appruntime/appruntime/models"
)

// TestRedeliverAFailedWebhookInTheBrowser releases a parked task whose
// agent's webhook points at a refused address: the one attempt fails and is
// not retried. The admin fixes the URL, redelivers from the Webhooks page,
// and sees the new attempt answered 204; the redelivery is audited.
func TestRedeliverAFailedWebhookInTheBrowser(t *testing.T) {
	t.Parallel()
	ctx := browser.New(t)
	s := newStack(t)
	f := seedDemo(t, s.P, s.Tenant)
	startWorker(t, s)
	var received atomic.Int32
	hook := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		received.Add(1)
		w.WriteHeader(http.StatusNoContent)
	}))
	t.Cleanup(hook.Close)
	bg, ws, actor := context.Background(), s.Tenant.Workspace.ID, "user:"+s.Tenant.Admin.ID
	agentID := s.Tenant.Agent.ID
	_, err := s.P.Admin.RotateWebhookSecret(bg, ws, actor, agentID, 0)
	require.NoError(t, err)
	_, err = s.P.Admin.UpdateAgent(bg, ws, actor, agentID, []byte(`{"resume_webhook_url": "http://169.254.169.254/hook"}`))
	require.NoError(t, err)

	signInAt(t, ctx, s, "/tasks/"+f.TaskID, `form[action$="/release"] button`)
	require.NoError(t, chromedp.Do(ctx,
		chromedp.SendKeys(chromedp.CSS(`form[action$="/release"] input[name="note"]`), "released from the test"),
		chromedp.Click(chromedp.CSS(`form[action$="/release"] button`)),
		chromedp.WaitVisible(chromedp.CSS(`.await-resolved`)),
	))
	var first models.WebhookDelivery
	require.Eventually(t, func() bool {
		return s.Store.DB.Where("task_id = ? AND finished_at IS NOT NULL", f.TaskID).Take(&first).Error == nil
	}, 30*time.Second, 100*time.Millisecond, "the first attempt is made and fails")
	require.Zero(t, first.StatusCode)
	require.Contains(t, first.Error, "refused address")

	// The task page shows the failed attempt; the Webhooks page offers to redeliver.
	require.NoError(t, chromedp.Do(ctx,
		chromedp.Navigate(s.URL+"/tasks/"+f.TaskID),
		chromedp.WaitVisible(chromedp.CSS(`table.deliveries`)),
	))
	_, err = s.P.Admin.UpdateAgent(bg, ws, actor, agentID, []byte(`{"resume_webhook_url": "`+hook.URL+`/hook"}`))
	require.NoError(t, err)
	row := `#deliveries tr[data-event="` + first.EventID + `"]`
	require.NoError(t, chromedp.Do(ctx,
		chromedp.Navigate(s.URL+"/webhooks?task="+f.TaskID),
		chromedp.WaitVisible(chromedp.CSS(row+`[data-attempt="1"] td.error`)),
		chromedp.Click(chromedp.CSS(row+`[data-attempt="1"] button.redeliver`)),
		chromedp.WaitVisible(chromedp.CSS(`#deliveries`)),
	))
	require.Eventually(t, func() bool { return auditCount(t, s.Store, ws, "webhook.redeliver", first.EventID) == 1 },
		10*time.Second, 100*time.Millisecond, "the redelivery is audited")

	// The new attempt shows up, answered 204, and nothing more can be redelivered.
	deadline := time.Now().Add(30 * time.Second)
	for {
		// A navigation may abort the redirect of the redeliver form still
		// in flight (ERR_ABORTED): the loop then simply loads again.
		if err := chromedp.Do(ctx, chromedp.Navigate(s.URL+"/webhooks?task="+f.TaskID), chromedp.WaitVisible(chromedp.CSS(`#deliveries`))); err != nil {
			require.True(t, time.Now().Before(deadline), "the Webhooks page does not load: %v", err)
			time.Sleep(200 * time.Millisecond)
			continue
		}
		status, err := chromedp.Run(ctx, chromedp.Evaluate[string](
			`(document.querySelector('`+row+`[data-attempt="2"] td.status') || {}).textContent || ""`))
		require.NoError(t, err)
		if status == "204" {
			break
		}
		require.True(t, time.Now().Before(deadline), "no second attempt answered 204 (got %q)", status)
		time.Sleep(200 * time.Millisecond)
	}
	buttons, err := chromedp.Run(ctx, chromedp.Evaluate[int](`document.querySelectorAll("button.redeliver").length`))
	require.NoError(t, err)
	require.Zero(t, buttons, "a delivered event is not offered for redelivery")
	require.EqualValues(t, 1, received.Load())
}
