package console_test

import (
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"

	"github.com/appruntime/appruntime/internal/outbox"
	"github.com/appruntime/appruntime/internal/review"
	"github.com/appruntime/appruntime/internal/testkit/browser"
	"github.com/appruntime/appruntime/models"
)

// TestSearchInTheBrowser types into the task list's search box and submits
// it: the list keeps only the task found, and the URL carries the search
// (so it can be shared). On the Webhooks page it chooses a status and
// finds only the failed attempt, the status in the URL again. A task's
// full id is copied with one click.
func TestSearchInTheBrowser(t *testing.T) {
	t.Parallel()
	ctx := browser.New(t)
	s := newStack(t)
	db, ws, agentID := s.Store.DB, s.Tenant.Workspace.ID, s.Tenant.Agent.ID
	invoices := models.Task{ID: models.NewID(), WorkspaceID: ws, AgentID: agentID, Title: "Quarterly invoices", Status: models.TaskRunning}
	onboard := models.Task{ID: models.NewID(), WorkspaceID: ws, AgentID: agentID, Title: "Onboard a supplier", Status: models.TaskRunning}
	require.NoError(t, db.Create(&[]models.Task{invoices, onboard}).Error)
	for i, tk := range []models.Task{invoices, onboard} {
		eventID, err := outbox.Add(db, outbox.KindResumeEvent, review.ResumePayload{Type: review.ResumeEventType, TaskID: tk.ID, AgentID: agentID, WorkspaceID: ws})
		require.NoError(t, err)
		at := time.Now().UTC()
		d := models.WebhookDelivery{ID: models.NewID(), EventID: eventID, EventType: review.ResumeEventType, AgentID: agentID, TaskID: tk.ID, URL: "https://hooks.example.test",
			Attempt: 1, StatusCode: []int{500, 204}[i], CreatedAt: at, FinishedAt: &at}
		require.NoError(t, db.Create(&d).Error)
	}

	signInAt(t, ctx, s, "/tasks", `#task-search input[name="q"]`)
	require.NoError(t, chromedp.Do(ctx,
		chromedp.SendKeys(chromedp.CSS(`#task-search input[name="q"]`), "INVOICES"),
		chromedp.Click(chromedp.CSS(`#task-search button[type="submit"]`)),
		// The unsearched list shows both tasks: the search's page is the
		// one without the other task.
		chromedp.WaitNotPresent(chromedp.CSS(`table a[href="/tasks/`+onboard.ID+`"]`)),
		chromedp.WaitVisible(chromedp.CSS(`table a[href="/tasks/`+invoices.ID+`"]`)),
	))
	location, err := chromedp.Run(ctx, chromedp.Location())
	require.NoError(t, err)
	rows, err := chromedp.Run(ctx, chromedp.Evaluate[int](`document.querySelectorAll("main table tbody tr").length`))
	require.NoError(t, err)
	u, err := url.Parse(location)
	require.NoError(t, err)
	require.Equal(t, "/tasks", u.Path)
	require.Equal(t, "INVOICES", u.Query().Get("q"), "the URL carries the search")
	require.Equal(t, 1, rows, "only the task whose title holds the text")

	require.NoError(t, chromedp.Do(ctx,
		chromedp.Navigate(s.URL+"/webhooks"),
		chromedp.WaitVisible(chromedp.CSS(`#webhook-search select[name="status"]`)),
		chromedp.SetValue(chromedp.CSS(`#webhook-search select[name="status"]`), review.DeliveryFailed),
		chromedp.Click(chromedp.CSS(`#webhook-search button[type="submit"]`)),
	))
	// The unfiltered list shows the failed attempt too: wait for the
	// filtered page, whose URL names the status.
	require.Eventually(t, func() bool {
		at, err := chromedp.Run(ctx, chromedp.Location())
		return err == nil && strings.Contains(at, "status="+review.DeliveryFailed)
	}, 10*time.Second, 50*time.Millisecond, "the filtered page loads")
	require.NoError(t, chromedp.Do(ctx, chromedp.WaitVisible(chromedp.CSS(`#deliveries td.error`))))
	location, err = chromedp.Run(ctx, chromedp.Location())
	require.NoError(t, err)
	rows, err = chromedp.Run(ctx, chromedp.Evaluate[int](`document.querySelectorAll("#deliveries tbody tr").length`))
	require.NoError(t, err)
	u, err = url.Parse(location)
	require.NoError(t, err)
	require.Equal(t, review.DeliveryFailed, u.Query().Get("status"), "the URL carries the status")
	require.Equal(t, 1, rows, "only the failed attempt")
	status, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS(`#deliveries tbody td.status`)))
	require.NoError(t, err)
	require.Equal(t, "500", status)

	// The task's page shows its full id with a copy button, whose script
	// (static/copy.js) runs under the page's CSP.
	require.NoError(t, chromedp.Do(ctx,
		chromedp.Navigate(s.URL+"/tasks/"+invoices.ID),
		chromedp.WaitVisible(chromedp.CSS(`.facts button.copy[data-copy="`+invoices.ID+`"]`)),
		chromedp.Click(chromedp.CSS(`.facts button.copy[data-copy="`+invoices.ID+`"]`)),
	))
	require.Eventually(t, func() bool {
		said, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS(`.facts button.copy[data-copy="`+invoices.ID+`"]`)))
		return err == nil && said == "copied"
	}, 5*time.Second, 50*time.Millisecond, "the copy button says it copied")
}
