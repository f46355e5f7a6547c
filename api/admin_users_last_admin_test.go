package api_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/appruntime/appruntime/internal/testkit"
)

// TestTheLastAdminStays: the admin API refuses (409) to demote or delete a
// workspace's last admin user, and allows both once another admin exists.
func TestTheLastAdminStays(t *testing.T) {
	t.Parallel()
	a := newTestAPI(t)
	tn := testkit.NewTenant(t, a.Store.DB)
	last := "/api/admin/users/" + tn.Admin.ID

	r := a.call(t, "PATCH", last, tn.AdminToken, map[string]any{"role": "reviewer"})
	require.Equal(t, 409, r.Status, "%s", r.Raw)
	require.Contains(t, r.Body["error"], "is the workspace's last admin and cannot be made reviewer")
	r = a.call(t, "DELETE", last, tn.AdminToken, nil)
	require.Equal(t, 409, r.Status, "%s", r.Raw)
	require.Contains(t, r.Body["error"], "is the workspace's last admin and cannot be deleted")
	r = a.call(t, "PATCH", last, tn.AdminToken, map[string]any{"name": "Still admin"})
	require.Equal(t, 200, r.Status, "%s", r.Raw)

	// Another workspace's admins do not count.
	testkit.NewTenant(t, a.Store.DB)
	require.Equal(t, 409, a.call(t, "DELETE", last, tn.AdminToken, nil).Status)

	r = a.call(t, "POST", "/api/admin/users", tn.AdminToken, map[string]any{
		"email": "second-admin@example.test", "role": "admin", "password": "long enough pw"})
	require.Equal(t, 201, r.Status, "%s", r.Raw)
	second := "/api/admin/users/" + admID(t, r)
	r = a.call(t, "PATCH", last, tn.AdminToken, map[string]any{"role": "reviewer"})
	require.Equal(t, 200, r.Status, "%s", r.Raw)
	r = a.call(t, "DELETE", second, tn.AdminToken, nil)
	require.Equal(t, 409, r.Status, "the second is now the last: %s", r.Raw)
	r = a.call(t, "DELETE", last, tn.AdminToken, nil)
	require.Equal(t, 204, r.Status, "a reviewer goes: %s", r.Raw)
}
