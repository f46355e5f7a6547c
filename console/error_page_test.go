package console_test

import (
	"context"
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/appruntime/appruntime/models"
)

// TestReviewerForbiddenPageLinksToTheQueue: a reviewer refused an admin
// page is sent on to the review queue, not to the overview they may not
// open either; the sign-in page says reviewers sign in there too.
func TestReviewerForbiddenPageLinksToTheQueue(t *testing.T) {
	t.Parallel()
	c := newTestConsole(t)
	rev, err := c.P.Admin.CreateUser(context.Background(), c.Tenant.Workspace.ID, "test", adminInput("rev-"+models.NewID()[:8]+"@example.test", models.RoleReviewer))
	require.NoError(t, err)
	cl := c.client(t)
	login := cl.get("/login")
	require.Contains(t, login.Body, "admins and reviewers sign in here")
	require.NotContains(t, login.Body, "for workspace admins")
	require.Equal(t, http.StatusSeeOther, cl.login(rev.Email, testPassword).Status)

	p := cl.get("/users")
	require.Equal(t, http.StatusForbidden, p.Status)
	require.Contains(t, p.Body, `<a href="/review">Go to the review queue</a>`)
	require.NotContains(t, p.Body, "Back to the overview")
}
