package api_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/appruntime/appruntime/internal/auth"
	"github.com/appruntime/appruntime/internal/testkit"
	"github.com/appruntime/appruntime/models"
)

// TestReviewPoolsAndTheClaimLimitOverHTTP: an admin makes a pool, puts a
// reviewer and an agent in it and sets the claim limit; the agent's next
// parked task goes to the pool's member only, and a member at the limit
// gets the 409 naming the claim they hold. Bad input is refused with its
// status and nothing changes.
func TestReviewPoolsAndTheClaimLimitOverHTTP(t *testing.T) {
	t.Parallel()
	a := newTestAPI(t)
	tn := testkit.NewTenant(t, a.Store.DB)
	other := testkit.NewTenant(t, a.Store.DB)
	reviewer := func(name string) (string, string) {
		u := models.User{ID: models.NewID(), WorkspaceID: tn.Workspace.ID, Email: name + "-" + suffix() + "@example.test",
			Name: name, Role: models.RoleReviewer, PasswordHash: "x"}
		require.NoError(t, a.Store.DB.Create(&u).Error)
		_, token, err := auth.IssueToken(context.Background(), a.Store.DB, tn.Workspace.ID, models.ScopeHost, "host "+name, &u.ID, nil)
		require.NoError(t, err)
		return u.ID, token
	}
	memberID, member := reviewer("member")
	_, outsider := reviewer("outsider")

	// The pool: created, a duplicate name and a blank one refused.
	r := a.call(t, "POST", "/api/admin/review-pools", tn.AdminToken, map[string]any{"name": "invoices"})
	require.Equal(t, 201, r.Status, "%s", r.Raw)
	poolID := admID(t, r)
	for _, bad := range []struct {
		body   any
		status int
	}{
		{map[string]any{"name": "invoices"}, 409},
		{map[string]any{"name": "  "}, 400},
		{map[string]any{"name": "x", "limit": 2}, 400},
	} {
		r = a.call(t, "POST", "/api/admin/review-pools", tn.AdminToken, bad.body)
		require.Equal(t, bad.status, r.Status, "%v: %s", bad.body, r.Raw)
	}
	r = a.call(t, "POST", "/api/admin/review-pools", tn.AgentToken, map[string]any{"name": "agents may not"})
	require.Equal(t, 401, r.Status, "%s", r.Raw)

	// Members and agents: another workspace's are not found; adding twice is fine.
	r = a.call(t, "PUT", "/api/admin/review-pools/"+poolID+"/members/"+other.Admin.ID, tn.AdminToken, nil)
	require.Equal(t, 404, r.Status, "%s", r.Raw)
	r = a.call(t, "PUT", "/api/admin/review-pools/"+poolID+"/agents/"+other.Agent.ID, tn.AdminToken, nil)
	require.Equal(t, 404, r.Status, "%s", r.Raw)
	r = a.call(t, "PUT", "/api/admin/review-pools/"+poolID+"/members/"+memberID, other.AdminToken, nil)
	require.Equal(t, 404, r.Status, "another workspace's admin does not see the pool: %s", r.Raw)
	for range 2 {
		r = a.call(t, "PUT", "/api/admin/review-pools/"+poolID+"/members/"+memberID, tn.AdminToken, nil)
		require.Equal(t, 200, r.Status, "%s", r.Raw)
		r = a.call(t, "PUT", "/api/admin/review-pools/"+poolID+"/agents/"+tn.Agent.ID, tn.AdminToken, nil)
		require.Equal(t, 200, r.Status, "%s", r.Raw)
	}
	require.Equal(t, []any{memberID}, r.Body["user_ids"])
	require.Equal(t, []any{tn.Agent.ID}, r.Body["agent_ids"])
	r = a.call(t, "GET", "/api/admin/review-pools", tn.AdminToken, nil)
	require.Equal(t, 200, r.Status, "%s", r.Raw)
	require.Len(t, r.Body["review_pools"], 1)
	r = a.call(t, "GET", "/api/admin/review-pools", other.AdminToken, nil)
	require.Empty(t, r.Body["review_pools"])
	var audited int64
	require.NoError(t, a.Store.DB.Model(&models.AuditEntry{}).Where("workspace_id = ? AND action LIKE ?", tn.Workspace.ID, "review_pool.%").Count(&audited).Error)
	require.Equal(t, int64(5), audited, "create, then each add twice")

	// The claim limit: 1..100.
	for _, bad := range []any{0, 101, "two"} {
		r = a.call(t, "PATCH", "/api/admin/workspaces/"+tn.Workspace.ID, tn.AdminToken, map[string]any{"review_claim_limit": bad})
		require.Equal(t, 400, r.Status, "%v: %s", bad, r.Raw)
	}
	r = a.call(t, "GET", "/api/admin/workspaces/"+tn.Workspace.ID, tn.AdminToken, nil)
	require.EqualValues(t, 1, r.Body["review_claim_limit"], "the default, unchanged by the refusals")

	// The agent parks two tasks: they take its pool.
	park := func(title string) string {
		r := a.call(t, "POST", "/api/agent/tasks", tn.AgentToken, map[string]any{"title": title})
		require.Equal(t, 201, r.Status, "%s", r.Raw)
		taskID := admID(t, r)
		r = a.call(t, "POST", "/api/agent/tasks/"+taskID+"/steps", tn.AgentToken, map[string]any{"configured_tool_id": reviewTool(t, a, tn)})
		require.Equal(t, 201, r.Status, "%s", r.Raw)
		return taskID
	}
	first, second := park("Invoice 1"), park("Invoice 2")
	var routes int64
	require.NoError(t, a.Store.DB.Model(&models.TaskReviewPool{}).Where("pool_id = ?", poolID).Count(&routes).Error)
	require.Equal(t, int64(2), routes)

	r = a.call(t, "POST", "/api/review/next", outsider, nil)
	require.Equal(t, 200, r.Status, "%s", r.Raw)
	require.Nil(t, r.Body["task"], "not in the pool")
	r = a.call(t, "POST", "/api/review/next", member, nil)
	require.Equal(t, 200, r.Status, "%s", r.Raw)
	require.Equal(t, first, r.Body["task"].(map[string]any)["task_id"])
	r = a.call(t, "POST", "/api/review/next", member, nil)
	require.Equal(t, 409, r.Status, "%s", r.Raw)
	require.Equal(t, "claim_limit_reached", r.Body["code"])
	require.EqualValues(t, 1, r.Body["claim_limit"])
	held := r.Body["held_claims"].([]any)
	require.Len(t, held, 1)
	require.Equal(t, first, held[0].(map[string]any)["task_id"])
	require.Equal(t, "Invoice 1", held[0].(map[string]any)["title"])

	r = a.call(t, "PATCH", "/api/admin/workspaces/"+tn.Workspace.ID, tn.AdminToken, map[string]any{"review_claim_limit": 2})
	require.Equal(t, 200, r.Status, "%s", r.Raw)
	require.EqualValues(t, 2, r.Body["review_claim_limit"])
	r = a.call(t, "POST", "/api/review/next", member, nil)
	require.Equal(t, 200, r.Status, "%s", r.Raw)
	require.Equal(t, second, r.Body["task"].(map[string]any)["task_id"])

	// Deleting the pool deletes its routes and links.
	r = a.call(t, "DELETE", "/api/admin/review-pools/"+poolID+"/members/"+memberID, tn.AdminToken, nil)
	require.Equal(t, 204, r.Status, "%s", r.Raw)
	r = a.call(t, "DELETE", "/api/admin/review-pools/"+poolID, tn.AdminToken, nil)
	require.Equal(t, 204, r.Status, "%s", r.Raw)
	require.NoError(t, a.Store.DB.Model(&models.TaskReviewPool{}).Where("pool_id = ?", poolID).Count(&routes).Error)
	require.Zero(t, routes)
	r = a.call(t, "GET", "/api/admin/review-pools/"+poolID, tn.AdminToken, nil)
	require.Equal(t, 404, r.Status, "%s", r.Raw)
}

// reviewTool configures an awaiting app tool for tn's agent (once per
// tenant is enough; each call makes a new one) and returns its id.
func reviewTool(t *testing.T, a *testAPI, tn testkit.Tenant) string {
	t.Helper()
	r := a.call(t, "POST", "/api/admin/bundles?name=review-"+suffix(), tn.AdminToken, []byte(`<!doctype html><p>review</p>`), "Content-Type", "text/html")
	require.Equal(t, 201, r.Status, "%s", r.Raw)
	bundleID := admID(t, r)
	b := models.Binding{ID: models.NewID(), WorkspaceID: tn.Workspace.ID, Name: "b-" + suffix(), BindingKind: "rest", AllowedOperations: models.JSON(`{}`), Version: 1}
	require.NoError(t, a.Store.DB.Create(&b).Error)
	r = a.call(t, "POST", "/api/admin/configured-tools", tn.AdminToken, map[string]any{
		"agent_id": tn.Agent.ID, "display_name": "Review " + suffix(), "base_tool": "app_tool", "bundle_id": bundleID, "binding_id": b.ID,
		"await_review": true})
	require.Equal(t, 201, r.Status, "%s", r.Raw)
	return admID(t, r)
}

// suffix is a short random name part (a UUIDv7's head is its time: not random).
func suffix() string { id := models.NewID(); return id[len(id)-8:] }
