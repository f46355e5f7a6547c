package console_test

import (
	"context"
	"net/http"
	"net/url"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/appruntime/appruntime/internal/admin"
	"github.com/appruntime/appruntime/internal/claim"
	"github.com/appruntime/appruntime/models"
)

// TestReviewPoolsPage: an admin sets the claim limit (a refusal names the
// field and changes nothing), creates a pool (a taken name refused), puts a
// reviewer and the agent in it, finds the pool's tasks with /tasks?pool=
// and deletes it; every change is audited. A reviewer at the claim limit
// who asks for the next task is shown the tasks they hold (409).
func TestReviewPoolsPage(t *testing.T) {
	t.Parallel()
	c := newTestConsole(t)
	cl := c.signedIn(t)
	ctx := context.Background()
	ws := c.Tenant.Workspace.ID
	limit := func() int {
		var w models.Workspace
		require.NoError(t, c.Store.DB.Take(&w, "id = ?", ws).Error)
		return w.ReviewClaimLimit
	}

	p := cl.get("/review-pools")
	require.Equal(t, http.StatusOK, p.Status, p.Body)
	require.Contains(t, p.Body, `name="review_claim_limit" min="1" max="100" value="1"`)
	p = cl.post("/review-pools/claim-limit", url.Values{"review_claim_limit": {"0"}})
	require.Equal(t, http.StatusBadRequest, p.Status, p.Body)
	require.Contains(t, p.Body, `<span class="field-error" role="alert">review_claim_limit must be between 1 and 100, got 0</span>`)
	p = cl.post("/review-pools/claim-limit", url.Values{"review_claim_limit": {"many"}})
	require.Equal(t, http.StatusBadRequest, p.Status, p.Body)
	require.Equal(t, 1, limit(), "a refused limit changes nothing")
	p = cl.post("/review-pools/claim-limit", url.Values{"review_claim_limit": {"3"}})
	require.Equal(t, http.StatusSeeOther, p.Status, p.Body)
	require.Equal(t, 3, limit())
	require.EqualValues(t, 1, auditCount(t, c.Store, ws, "workspace.update", ws))

	p = cl.post("/review-pools", url.Values{"name": {"invoices"}})
	require.Equal(t, http.StatusSeeOther, p.Status, p.Body)
	p = cl.post("/review-pools", url.Values{"name": {"invoices"}})
	require.Equal(t, http.StatusConflict, p.Status, p.Body)
	require.Contains(t, p.Body, `<span class="field-error" role="alert">name &#34;invoices&#34; is already taken by another review pool of this workspace</span>`)
	var pool models.ReviewPool
	require.NoError(t, c.Store.DB.Take(&pool, "workspace_id = ? AND name = ?", ws, "invoices").Error)
	require.EqualValues(t, 1, auditCount(t, c.Store, ws, "review_pool.create", pool.ID))

	rev, err := c.P.Admin.CreateUser(ctx, ws, "test", admin.UserInput{Email: "pool-" + models.NewID()[28:] + "@example.test", Role: models.RoleReviewer, Password: testPassword})
	require.NoError(t, err)
	p = cl.post("/review-pools/"+pool.ID+"/members", url.Values{"target_id": {rev.ID}})
	require.Equal(t, http.StatusSeeOther, p.Status, p.Body)
	p = cl.post("/review-pools/"+pool.ID+"/agents", url.Values{"target_id": {c.Tenant.Agent.ID}})
	require.Equal(t, http.StatusSeeOther, p.Status, p.Body)
	p = cl.post("/review-pools/"+pool.ID+"/agents", url.Values{"target_id": {models.NewID()}})
	require.Equal(t, http.StatusNotFound, p.Status, p.Body)
	p = cl.get("/review-pools")
	require.Contains(t, p.Body, `<a href="/tasks?pool=`+pool.ID+`">invoices</a>`)
	require.Contains(t, p.Body, "<li>"+rev.Email)
	require.Contains(t, p.Body, "<li>"+c.Tenant.Agent.Name)

	// Two parked tasks, one routed to the pool: the filter finds that one.
	park := func(title string) string {
		now := time.Now().UTC()
		tk := models.Task{ID: models.NewID(), WorkspaceID: ws, AgentID: c.Tenant.Agent.ID, Title: title, Status: models.TaskWaitingForInput, CreatedAt: now, UpdatedAt: now}
		require.NoError(t, c.Store.DB.Create(&tk).Error)
		step := models.Step{ID: models.NewID(), TaskID: tk.ID, Kind: models.StepAppTool, Status: models.StepCompleted}
		require.NoError(t, c.Store.DB.Create(&step).Error)
		require.NoError(t, c.Store.DB.Create(&models.TaskAwait{ID: models.NewID(), TaskID: tk.ID, SourceType: models.AwaitSourceAppTool,
			CorrelationKey: step.ID, Status: models.AwaitPending}).Error)
		return tk.ID
	}
	open := park("Open to anyone")
	routed := park("Routed invoice")
	require.NoError(t, claim.RouteToAgentPools(ctx, c.Store.DB, routed, c.Tenant.Agent.ID))
	p = cl.get("/tasks?pool=" + pool.ID)
	require.Equal(t, http.StatusOK, p.Status, p.Body)
	require.Contains(t, p.Body, "Routed invoice")
	require.NotContains(t, p.Body, "Open to anyone")
	require.Contains(t, cl.get("/tasks").Body, "Open to anyone")
	require.Equal(t, http.StatusBadRequest, cl.get("/tasks?pool=nope").Status)

	// The member at the limit asks for more: shown what they hold.
	require.NoError(t, c.Store.DB.Model(&models.Workspace{}).Where("id = ?", ws).Update("review_claim_limit", 1).Error)
	rc := c.client(t)
	require.Equal(t, http.StatusSeeOther, rc.login(rev.Email, testPassword).Status)
	rc.get("/review")
	p = rc.post("/review/next", nil)
	require.Equal(t, http.StatusSeeOther, p.Status, p.Body)
	require.Equal(t, "/review/tasks/"+open, p.Header.Get("Location"), "the oldest first: a task of no pool is anyone's")
	rc.get("/review")
	p = rc.post("/review/next", nil)
	require.Equal(t, http.StatusConflict, p.Status, p.Body)
	require.Contains(t, p.Body, `id="claim-limit-reached"`)
	require.Contains(t, p.Body, `<a href="/review/tasks/`+open+`">Open to anyone</a>`)
	r, body := rc.postJSON("/review/next", nil)
	require.Equal(t, http.StatusConflict, r.Status, r.Body)
	require.Equal(t, claim.ClaimLimitReached, body["code"], r.Body)

	p = cl.post("/review-pools/"+pool.ID+"/members", url.Values{"target_id": {rev.ID}, "remove": {"yes"}})
	require.Equal(t, http.StatusSeeOther, p.Status, p.Body)
	p = cl.post("/review-pools/"+pool.ID+"/delete", nil)
	require.Equal(t, http.StatusSeeOther, p.Status, p.Body)
	require.Equal(t, "/review-pools?notice=review_pool_deleted", p.Header.Get("Location"))
	require.EqualValues(t, 1, auditCount(t, c.Store, ws, "review_pool.delete", pool.ID))
	require.Contains(t, cl.get("/review-pools").Body, "No pool yet")
}
