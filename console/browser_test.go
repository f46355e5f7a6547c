package console_test

import (
	"context"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"

	"github.com/appruntime/appruntime/api"
	"github.com/appruntime/appruntime/internal/config"
	"github.com/appruntime/appruntime/internal/outbox"
	"github.com/appruntime/appruntime/internal/testkit"
	"github.com/appruntime/appruntime/internal/testkit/browser"
	"github.com/appruntime/appruntime/internal/web"
	"github.com/appruntime/appruntime/models"
)

// stack is the API and the console on loopback, over one platform.
type stack struct {
	*testConsole
	APIURL string
}

// newStack serves the API and the console against one platform, so that
// the console's host page mounts a bundle the API serves and the bundle
// calls that API's runtime verbs. opts adjust the configuration before the
// platform is built.
func newStack(t *testing.T, opts ...func(*config.Config)) *stack {
	t.Helper()
	apiLn, err := web.Listen("127.0.0.1:0")
	require.NoError(t, err)
	consoleLn, err := web.Listen("127.0.0.1:0")
	require.NoError(t, err)
	s := &stack{testConsole: &testConsole{URL: "http://" + consoleLn.Addr().String()}, APIURL: "http://" + apiLn.Addr().String()}
	cfg := testkit.Config(testkit.DatabaseURL(), testkit.RedisURL())
	cfg.PublicAPIURL, cfg.BundleBaseURL, cfg.ConsoleURL = s.APIURL, s.APIURL+"/bundles", s.URL
	for _, o := range opts {
		o(cfg)
	}
	s.P, s.Store = newPlatform(t, cfg)
	s.Tenant = testkit.NewTenant(t, s.Store.DB)
	// The tenant's admin is the deployment's operator: the Queues tests
	// pause queues and cancel jobs.
	s.P.Config.OperatorUserIDs = []string{s.Tenant.Admin.ID}
	serve(t, api.New(s.P.APIServices()), apiLn)
	serve(t, mustConsole(t, s.P), consoleLn)
	return s
}

// signInAt opens path, signs in through the form it redirects to, and waits
// for ready (a selector of the page asked for).
func signInAt(t *testing.T, ctx context.Context, s *stack, path, ready string) {
	t.Helper()
	require.NoError(t, chromedp.Do(ctx,
		chromedp.Navigate(s.URL+path),
		chromedp.WaitVisible(chromedp.CSS(`input[name="email"]`)),
		chromedp.SendKeys(chromedp.CSS(`input[name="email"]`), s.Tenant.Admin.Email),
		chromedp.SendKeys(chromedp.CSS(`input[name="password"]`), testPassword),
		chromedp.Click(chromedp.CSS(`form button[type="submit"]`)),
		chromedp.WaitVisible(chromedp.CSS(ready)),
	))
}

// TestReviewInTheBrowser is the demo clicked through in a real browser: sign
// in through the form, open the parked step's artifact (the console hosts
// the bundle in a sandboxed iframe and hands it a session), let the bundle
// list the invoices (read), hold one (write) and approve (an action that
// resolves the await), then check the database.
func TestReviewInTheBrowser(t *testing.T) {
	t.Parallel()
	ctx := browser.New(t)
	s := newStack(t)
	f := seedDemo(t, s.P, s.Tenant)

	// Sign in through the form.
	signInAt(t, ctx, s, "/tasks/"+f.TaskID, `form[action$="/artifact"] button`)
	location, err := chromedp.Run(ctx, chromedp.Location())
	require.NoError(t, err)
	require.Equal(t, s.URL+"/tasks/"+f.TaskID, location, "sign-in returns to the page asked for")

	// Following a link to the artifact page (as another site could make the
	// browser do) shows the step and a button, and mints nothing.
	require.NoError(t, chromedp.Do(ctx,
		chromedp.Navigate(s.URL+"/tasks/"+f.TaskID+"/steps/"+f.StepID+"/artifact"),
		chromedp.WaitVisible(chromedp.CSS(`#open-artifact`)),
	))
	frames, err := chromedp.Run(ctx, chromedp.Evaluate[int](`document.querySelectorAll("iframe").length`))
	require.NoError(t, err)
	require.Zero(t, frames)
	var minted int64
	require.NoError(t, s.Store.DB.Model(&models.AppSession{}).Where("step_id = ?", f.StepID).Count(&minted).Error)
	require.Zero(t, minted, "a GET never mints")

	// Open the artifact from the task page: a form post, which mints.
	require.NoError(t, chromedp.Do(ctx, chromedp.Navigate(s.URL+"/tasks/"+f.TaskID)))
	require.NoError(t, chromedp.Do(ctx,
		chromedp.Click(chromedp.CSS(`form[action$="/artifact"] button`)),
		chromedp.WaitVisible(chromedp.CSS(`#artifact-frame`)),
	))
	frame := browser.Frame(t, ctx, s.APIURL+"/bundles/"+f.BundleID+"/")

	// The bundle got its init message and lists the invoices (a read).
	require.NoError(t, chromedp.Do(frame, chromedp.WaitVisible(chromedp.CSS(`#rows tbody tr:nth-child(3)`))))
	status, err := chromedp.Run(frame, chromedp.Text(chromedp.CSS(`#status`)))
	require.NoError(t, err)
	require.Equal(t, "3 invoice(s)", status)
	bridge, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS(`#bridge-status`)))
	require.NoError(t, err)
	require.Equal(t, "connected", bridge)

	// Hold the first invoice (a write).
	require.NoError(t, chromedp.Do(frame,
		chromedp.Click(chromedp.CSS(`#rows tbody tr:nth-child(1) button`)),
		browser.Poll(`document.querySelector("#rows tbody tr:nth-child(1) td:nth-child(4)").textContent === "on_hold"`, 15*time.Second),
	))
	var invoiceStatus string
	require.NoError(t, f.Source.DB.Raw(`SELECT status FROM invoices WHERE id = 1`).Scan(&invoiceStatus).Error)
	require.Equal(t, "on_hold", invoiceStatus, "the write reached the data source")

	// Approve: the action resolves the await.
	require.NoError(t, chromedp.Do(frame,
		chromedp.Click(chromedp.CSS(`#approve`)),
		browser.Poll(`document.querySelector("#status").textContent.startsWith("Approved")`, 15*time.Second),
	))
	status, err = chromedp.Run(frame, chromedp.Text(chromedp.CSS(`#status`)))
	require.NoError(t, err)
	require.Equal(t, "Approved: the agent resumes.", status)

	var aw models.TaskAwait
	require.NoError(t, s.Store.DB.Where("id = ?", f.AwaitID).Take(&aw).Error)
	require.Equal(t, models.AwaitResolved, aw.Status)
	require.Equal(t, "user:"+s.Tenant.Admin.ID, aw.ResolvedBy, "resolved by the admin the console minted the session for")
	var resumes []models.Outbox
	require.NoError(t, s.Store.DB.Where("kind = ?", outbox.KindResumeEvent).Find(&resumes).Error)
	require.Len(t, resumes, 1)
	require.Contains(t, string(resumes[0].Payload), f.AwaitID)
	var decisions int64
	require.NoError(t, f.Source.DB.Raw(`SELECT count(*) FROM decisions WHERE task_id = ?`, f.TaskID).Scan(&decisions).Error)
	require.Equal(t, int64(1), decisions)

	// The console shows the settled await when the task page is reloaded.
	require.NoError(t, chromedp.Do(ctx, chromedp.Navigate(s.URL+"/tasks/"+f.TaskID)))
	awaitText, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS(`.await-resolved`)))
	require.NoError(t, err)
	require.Equal(t, "resolved", awaitText)
}
