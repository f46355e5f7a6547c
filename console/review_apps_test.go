package console_test

import (
	"context"
	"net/http"
	"net/url"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/appruntime/appruntime/internal/appblock"
	"github.com/appruntime/appruntime/internal/task"
	"github.com/appruntime/appruntime/models"
)

// TestReviewAppBlocksAccess: the reviewer holding a task gets its final
// reply's app blocks on the page (framed from the console's own asset
// route), the assets under their own policy and the composer; another
// reviewer gets neither the assets nor the composer, and an asset no reply
// shows is not served.
func TestReviewAppBlocksAccess(t *testing.T) {
	t.Parallel()
	c := newTestConsole(t)
	f := seedDemo(t, c.P, c.Tenant)
	ctx := context.Background()
	caller := task.Caller{WorkspaceID: c.Tenant.Workspace.ID, AgentID: c.Tenant.Agent.ID, Actor: "agent:" + c.Tenant.Agent.ID}
	html := []byte("<!doctype html><p>app</p>")
	shown, err := c.P.Replies.UploadAsset(ctx, caller, "text/html", html)
	require.NoError(t, err)
	hidden, err := c.P.Replies.UploadAsset(ctx, caller, "text/html", html)
	require.NoError(t, err)
	_, err = c.P.Replies.Post(ctx, caller, f.TaskID, []byte(`{"final": true, "blocks": [{"type": "app", "asset_id": "`+shown.ID+`", "title": "Totals", "fallback": "F"}]}`))
	require.NoError(t, err)

	holder := c.client(t)
	require.Equal(t, http.StatusSeeOther, holder.login(f.ReviewerEmail, testPassword).Status)
	holder.get("/review")
	p := holder.post("/review/next", nil)
	require.Equal(t, "/review/tasks/"+f.TaskID, p.Header.Get("Location"))
	base := "/review/tasks/" + f.TaskID

	page := holder.get(base)
	require.Equal(t, http.StatusOK, page.Status, page.Body)
	require.Contains(t, page.Body, `data-asset-base="`+base+`/assets/"`)
	require.Contains(t, page.Body, `action="`+base+`/messages"`)
	require.Contains(t, page.Body, "Totals")
	require.Regexp(t, `frame-src http://\S+ 'self'$`, page.Header.Get("Content-Security-Policy"), "the bundle origin and the assets")

	a := holder.get(base + "/assets/" + shown.ID)
	require.Equal(t, http.StatusOK, a.Status, a.Body)
	require.Equal(t, string(html), a.Body)
	require.Equal(t, appblock.AssetCSP(c.URL), a.Header.Get("Content-Security-Policy"))
	require.Empty(t, a.Header.Get("X-Frame-Options"))
	require.Equal(t, http.StatusNotFound, holder.get(base+"/assets/"+hidden.ID).Status, "an asset no reply shows")
	require.Equal(t, http.StatusBadRequest, holder.post(base+"/messages", url.Values{"message": {"  "}}).Status)

	// Another reviewer of the workspace does not hold the task.
	other, err := c.P.Admin.CreateUser(ctx, c.Tenant.Workspace.ID, "test", adminInput("rev2-"+models.NewID()[:8]+"@example.test", models.RoleReviewer))
	require.NoError(t, err)
	cl2 := c.client(t)
	require.Equal(t, http.StatusSeeOther, cl2.login(other.Email, testPassword).Status)
	cl2.get("/review")
	require.Equal(t, http.StatusConflict, cl2.get(base+"/assets/"+shown.ID).Status)
	require.Equal(t, http.StatusConflict, cl2.post(base+"/messages", url.Values{"message": {"hi"}}).Status)
	var n int64
	require.NoError(t, c.Store.DB.Model(&models.FeedEvent{}).Where("task_id = ? AND type = ?", f.TaskID, models.FeedUserMessage).Count(&n).Error)
	require.Zero(t, n)
}
