package console_test

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"

	"github.com/appruntime/appruntime/internal/config"
	"github.com/appruntime/appruntime/internal/metrics"
	"github.com/appruntime/appruntime/internal/session"
	"github.com/appruntime/appruntime/internal/testkit/browser"
	"github.com/appruntime/appruntime/models"
)

// shortSessionTTL makes sessions expire within the test, so the demo
// bundle (on the SDK) must renew through the console's artifact page.
const shortSessionTTL = 6 * time.Second

// rateLimited reads, from the platform's registry, how many calls of verb
// the runtime refused with 429 for the surface rate.
func rateLimited(t *testing.T, s *stack, verb string) float64 {
	t.Helper()
	families, err := s.P.Metrics.Registry().Gather()
	require.NoError(t, err)
	for _, f := range families {
		if f.GetName() != metrics.Namespace+"_runtime_rate_limited_total" {
			continue
		}
		for _, m := range f.GetMetric() {
			labels := map[string]string{}
			for _, l := range m.GetLabel() {
				labels[l.GetName()] = l.GetValue()
			}
			if labels["class"] == metrics.LimitSurfaceRate && labels["verb"] == verb {
				return m.GetCounter().GetValue()
			}
		}
	}
	return 0
}

// TestDemoBundleRenewsItsSessionAndRetriesA429 runs the demo bundle, which
// is built on the SDK, against the real API in Chromium, mounted by the
// console's artifact page. Sessions last six seconds: the SDK asks the host
// for renew_session before each expires, the page mints a replacement
// (CSRF-checked POST; the replaced session is revoked, so a task's other
// sessions are untouched), and a write made after the first token would
// have expired succeeds while the first token is refused. Then another
// caller spends the surface's budget (1/s, burst 1): the approval is
// answered 429 with Retry-After, the SDK waits and retries, and the action
// runs exactly once.
func TestDemoBundleRenewsItsSessionAndRetriesA429(t *testing.T) {
	t.Parallel()
	ctx := browser.New(t)
	s := newStack(t, func(c *config.Config) {
		c.SessionTTL = shortSessionTTL
		c.SurfaceRate, c.SurfaceBurst = 1, 1
	})
	f := seedDemo(t, s.P, s.Tenant)

	signInAt(t, ctx, s, "/tasks/"+f.TaskID, `form[action$="/artifact"] button`)
	require.NoError(t, chromedp.Do(ctx,
		chromedp.Click(chromedp.CSS(`form[action$="/artifact"] button`)),
		chromedp.WaitVisible(chromedp.CSS(`#artifact-frame`)),
	))
	firstToken, err := chromedp.Run(ctx, chromedp.Evaluate[string](
		`JSON.parse(document.getElementById("artifact-host").dataset.init).session_token`))
	require.NoError(t, err)
	frame := browser.Frame(t, ctx, s.APIURL+"/bundles/"+f.BundleID+"/")
	require.NoError(t, chromedp.Do(frame, chromedp.WaitVisible(chromedp.CSS(`#rows tbody tr:nth-child(3)`))))

	sessions := func() []models.AppSession {
		var rows []models.AppSession
		require.NoError(t, s.Store.DB.Where("step_id = ?", f.StepID).Order("created_at, id").Find(&rows).Error)
		return rows
	}
	first := sessions()
	require.Len(t, first, 1)
	require.WithinDuration(t, first[0].CreatedAt.Add(shortSessionTTL), first[0].ExpiresAt, time.Second, "the configured TTL")

	// The SDK renews before the first token expires: the page's mint
	// replaces (revokes) it.
	require.Eventually(t, func() bool { return len(sessions()) >= 2 }, 20*time.Second, 100*time.Millisecond, "no renewal")
	renewed := sessions()
	require.NotNil(t, renewed[0].RevokedAt, "the renewal replaced the first session")
	require.True(t, renewed[1].CreatedAt.Before(first[0].ExpiresAt), "renewed at %s, before the expiry at %s", renewed[1].CreatedAt, first[0].ExpiresAt)

	// Past the first token's expiry (and the verifier's leeway), the bundle
	// still writes: with the renewed token.
	time.Sleep(time.Until(first[0].ExpiresAt.Add(session.Leeway + time.Second)))
	require.NoError(t, chromedp.Do(frame,
		chromedp.Click(chromedp.CSS(`#rows tbody tr:nth-child(1) button`)),
		browser.Poll(`document.querySelector("#rows tbody tr:nth-child(1) td:nth-child(4)").textContent === "on_hold"`, 20*time.Second),
	))
	var invoiceStatus string
	require.NoError(t, f.Source.DB.Raw(`SELECT status FROM invoices WHERE id = 1`).Scan(&invoiceStatus).Error)
	require.Equal(t, "on_hold", invoiceStatus)
	req, err := http.NewRequest(http.MethodPost, s.APIURL+"/api/app-runtime/read", strings.NewReader(`{"op":"list_invoices","payload":{}}`))
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+firstToken)
	req.Header.Set("Content-Type", "application/json")
	res, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	res.Body.Close()
	require.Equal(t, http.StatusUnauthorized, res.StatusCode, "the first token is no longer good")
	live := 0
	for _, r := range sessions() {
		if r.RevokedAt == nil && r.ExpiresAt.After(time.Now()) {
			live++
		}
	}
	require.Equal(t, 1, live, "each renewal replaced the one before")

	// Another caller keeps the surface's budget spent until the bundle's
	// approval is refused once; the SDK waits Retry-After and retries.
	drainCtx, stopDraining := context.WithCancel(context.Background())
	defer stopDraining()
	_ = s.P.Limiter.Allow(drainCtx, f.StepID) // the budget is spent before the click
	draining := make(chan struct{})
	go func() {
		defer close(draining)
		for drainCtx.Err() == nil && rateLimited(t, s, "action") == 0 {
			_ = s.P.Limiter.Allow(drainCtx, f.StepID)
			time.Sleep(20 * time.Millisecond)
		}
	}()
	clicked := time.Now()
	require.NoError(t, chromedp.Do(frame,
		chromedp.Click(chromedp.CSS(`#approve`)),
		browser.Poll(`document.getElementById("status").textContent === "Approved: the agent resumes."`, 30*time.Second),
	))
	stopDraining()
	<-draining
	require.GreaterOrEqual(t, rateLimited(t, s, "action"), 1.0, "the approval was refused with 429 at least once")
	require.GreaterOrEqual(t, time.Since(clicked), time.Second, "the SDK waited Retry-After")
	var decisions int64
	require.NoError(t, f.Source.DB.Raw(`SELECT count(*) FROM decisions`).Scan(&decisions).Error)
	require.EqualValues(t, 1, decisions, "the action ran once")
	var await models.TaskAwait
	require.NoError(t, s.Store.DB.Where("id = ?", f.AwaitID).Take(&await).Error)
	require.Equal(t, "resolved", await.Status, "the approval released the task")
}
