package console_test

import (
	"net/http"
	"net/url"
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"

	"github.com/appruntime/appruntime/internal/artifact"
	"github.com/appruntime/appruntime/internal/testkit"
	"github.com/appruntime/appruntime/internal/testkit/browser"
	"github.com/appruntime/appruntime/models"
)

// TestBundlePreviewAgainstABindingInTheBrowser: an admin previews the demo
// bundle against the demo binding (preselected, since the demo tool mounts
// the bundle with it); the frame reads the real invoices through a preview
// session, and a write (Hold) is refused as read-only, writing nothing. The
// mint is audited, and the session is on no task, listed as a preview.
func TestBundlePreviewAgainstABindingInTheBrowser(t *testing.T) {
	t.Parallel()
	ctx := browser.New(t)
	s := newStack(t)
	f := seedDemo(t, s.P, s.Tenant)
	path := "/bundles/" + f.BundleID + "/versions/1/preview"

	signInAt(t, ctx, s, path, `#preview-with-data`)
	selected, err := chromedp.Run(ctx, chromedp.Evaluate[string](`document.querySelector("#preview-binding").value`))
	require.NoError(t, err)
	require.Equal(t, f.BindingID, selected, "the demo binding is preselected")
	var before int64
	require.NoError(t, s.Store.DB.Model(&models.AppSession{}).Where("workspace_id = ?", s.Tenant.Workspace.ID).Count(&before).Error)
	require.Zero(t, before, "a GET mints nothing")

	require.NoError(t, chromedp.Do(ctx,
		chromedp.Click(chromedp.CSS(`#preview-with-data`)),
		chromedp.WaitVisible(chromedp.CSS(`#artifact-frame`)),
	))
	frame := browser.Frame(t, ctx, s.APIURL+"/bundles/"+f.BundleID+"/")
	require.NoError(t, chromedp.Do(frame, browser.WaitText(`#status`, `t === "3 invoice(s)"`)))
	vendor, err := chromedp.Run(frame, chromedp.Text(chromedp.CSS(`#rows tbody tr:nth-child(3) td:nth-child(2)`)))
	require.NoError(t, err)
	require.Equal(t, "Globex", vendor, "real rows through the binding")

	// Hold (a write) is refused: 403, read-only, nothing written.
	require.NoError(t, chromedp.Do(frame,
		browser.Press(`#rows tbody tr:nth-child(1) button`),
		browser.WaitText(`#status`, `t.includes("preview sessions are read-only")`),
	))
	status, err := chromedp.Run(frame, chromedp.Text(chromedp.CSS(`#status`)))
	require.NoError(t, err)
	require.Contains(t, status, "(403)")
	var invoiceStatus string
	require.NoError(t, f.Source.DB.Raw(`SELECT status FROM invoices WHERE id = 1`).Scan(&invoiceStatus).Error)
	require.Equal(t, "pending", invoiceStatus)

	var rows []models.AppSession
	require.NoError(t, s.Store.DB.Where("workspace_id = ?", s.Tenant.Workspace.ID).Find(&rows).Error)
	require.Len(t, rows, 1)
	require.Equal(t, models.SessionPreview, rows[0].Kind)
	require.Empty(t, rows[0].TaskID)
	require.Equal(t, f.BindingID, *rows[0].BindingID)
	require.Equal(t, int64(1), auditCount(t, s.Store, s.Tenant.Workspace.ID, artifact.AuditSessionPreview, rows[0].ID))

	// The live sessions page lists it as a preview, on no task.
	require.NoError(t, chromedp.Do(ctx,
		chromedp.Navigate(s.URL+"/sessions"),
		browser.WaitText(`.preview-session`, `t.includes("Preview against binding")`),
	))
}

// TestBundlePreviewForm: the preview form refuses a POST without the form's
// token, a binding of another workspace or none (404), minting nothing; a
// reviewer may not preview.
func TestBundlePreviewForm(t *testing.T) {
	t.Parallel()
	c := newTestConsole(t)
	f := seedDemo(t, c.P, c.Tenant)
	cl := c.signedIn(t)
	path := "/bundles/" + f.BundleID + "/versions/1/preview"
	other := testkit.NewTenant(t, c.Store.DB)
	otherBinding := models.Binding{ID: models.NewID(), WorkspaceID: other.Workspace.ID, Name: "theirs", BindingKind: "postgres",
		AllowedOperations: models.JSON(`{}`), Version: 1}
	require.NoError(t, c.Store.DB.Create(&otherBinding).Error)

	require.Equal(t, http.StatusOK, cl.get(path).Status)
	require.Equal(t, http.StatusForbidden, cl.post(path, url.Values{"binding_id": {f.BindingID}, "csrf": {""}}).Status)
	require.Equal(t, http.StatusNotFound, cl.post(path, url.Values{"binding_id": {otherBinding.ID}}).Status)
	require.Equal(t, http.StatusNotFound, cl.post(path, url.Values{"binding_id": {""}}).Status)
	var n int64
	require.NoError(t, c.Store.DB.Model(&models.AppSession{}).Count(&n).Error)
	require.Zero(t, n)

	p := cl.post(path, url.Values{"binding_id": {f.BindingID}})
	require.Equal(t, http.StatusOK, p.Status, p.Body)
	require.Contains(t, p.Body, `id="artifact-frame" sandbox="allow-scripts"`)
	require.Contains(t, p.Body, "&#34;verbs&#34;:[&#34;read&#34;]")

	rv := c.client(t)
	require.Equal(t, http.StatusSeeOther, rv.login(f.ReviewerEmail, testPassword).Status)
	rv.get("/review")
	require.Equal(t, http.StatusForbidden, rv.post(path, url.Values{"binding_id": {f.BindingID}}).Status)
}
