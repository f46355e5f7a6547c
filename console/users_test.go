package console_test

import (
	"context"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/appruntime/appruntime/models"
)

// TestUserForms creates users with a typed and a generated password,
// changes a role, resets a password and deletes a user through the
// console's forms, each audited as the admin API's change is; refusals keep
// the input and name the field; the workspace's last admin can be neither
// demoted nor deleted.
func TestUserForms(t *testing.T) {
	t.Parallel()
	c := newTestConsole(t)
	cl := c.signedIn(t)
	ws, me := c.Tenant.Workspace.ID, c.Tenant.Admin
	email := "rita-" + strings.ToLower(models.NewID()[:8]) + "@example.test"
	users := func() int64 { return workspaceRows(t, c.Store, &models.User{}, ws) }
	before := users()

	// Refused: the input comes back, the message beside its field.
	cl.get("/users")
	p := cl.post("/users", url.Values{"email": {email}, "name": {"Rita"}, "role": {"reviewer"}, "password": {"short"}})
	require.Equal(t, http.StatusBadRequest, p.Status, p.Body)
	require.Contains(t, p.Body, `value="`+email+`"`)
	require.Contains(t, p.Body, `value="Rita"`)
	require.Contains(t, p.Body, `<option value="reviewer" selected>`)
	require.Contains(t, p.Body, `<span class="field-error" role="alert">password must be at least 8 characters</span>`)
	require.NotContains(t, p.Body, `value="short"`, "a password is never written back into the page")
	p = cl.post("/users", url.Values{"email": {me.Email}, "name": {"Twin"}, "role": {"admin"}})
	require.Equal(t, http.StatusConflict, p.Status, p.Body)
	require.Contains(t, p.Body, `<span class="field-error" role="alert">a user with email `+me.Email+` already exists in this workspace</span>`)
	require.Contains(t, p.Body, `value="Twin"`)
	require.Equal(t, before, users(), "a refused form creates nothing")

	// Created with a generated password, shown once, that signs in.
	p = cl.post("/users", url.Values{"email": {email}, "name": {"Rita"}, "role": {"reviewer"}})
	require.Equal(t, http.StatusCreated, p.Status, p.Body)
	m := onceShown.FindStringSubmatch(p.Body)
	require.NotNil(t, m, p.Body)
	var rita models.User
	require.NoError(t, c.Store.DB.Where("workspace_id = ? AND email = ?", ws, email).Take(&rita).Error)
	require.Equal(t, models.RoleReviewer, rita.Role)
	require.EqualValues(t, 1, auditCount(t, c.Store, ws, "user.create", rita.ID))
	require.Equal(t, http.StatusSeeOther, c.client(t).login(email, m[1]).Status, "the generated password signs in")
	require.Contains(t, cl.get("/users").Body, `href="/users/`+rita.ID+`"`, "the list links the user's page")

	// Created with a typed password: not shown again.
	other := "otto-" + strings.ToLower(models.NewID()[:8]) + "@example.test"
	p = cl.post("/users", url.Values{"email": {other}, "role": {"admin"}, "password": {testPassword}})
	require.Equal(t, http.StatusSeeOther, p.Status, p.Body)
	require.Contains(t, p.Header.Get("Location"), "notice=user_created")

	// Role changed; a refused edit keeps the input.
	cl.get("/users/" + rita.ID)
	p = cl.post("/users/"+rita.ID, url.Values{"email": {"not an email"}, "name": {"Rita R."}, "role": {"admin"}})
	require.Equal(t, http.StatusBadRequest, p.Status, p.Body)
	require.Contains(t, p.Body, `value="not an email"`)
	require.Contains(t, p.Body, `value="Rita R."`)
	require.Contains(t, p.Body, `<span class="field-error" role="alert">email &#34;not an email&#34; is not an email address</span>`)
	p = cl.post("/users/"+rita.ID, url.Values{"email": {email}, "name": {"Rita R."}, "role": {"admin"}})
	require.Equal(t, http.StatusSeeOther, p.Status, p.Body)
	require.NoError(t, c.Store.DB.Take(&rita, "id = ?", rita.ID).Error)
	require.Equal(t, models.RoleAdmin, rita.Role)
	require.Equal(t, "Rita R.", rita.Name)
	require.EqualValues(t, 1, auditCount(t, c.Store, ws, "user.update", rita.ID))

	// Password reset: generated and shown once; the old one no longer signs in.
	cl.get("/users/" + rita.ID)
	p = cl.post("/users/"+rita.ID+"/password", url.Values{"password": {"tiny"}})
	require.Equal(t, http.StatusBadRequest, p.Status, p.Body)
	require.Contains(t, p.Body, `<span class="field-error" role="alert">password must be at least 8 characters</span>`)
	p = cl.post("/users/"+rita.ID+"/password", nil)
	require.Equal(t, http.StatusOK, p.Status, p.Body)
	reset := onceShown.FindStringSubmatch(p.Body)
	require.NotNil(t, reset, p.Body)
	require.NotEqual(t, m[1], reset[1])
	require.Equal(t, http.StatusSeeOther, c.client(t).login(email, reset[1]).Status, "the new password signs in")
	require.NotEqual(t, http.StatusSeeOther, c.client(t).login(email, m[1]).Status, "the old one does not")
	require.EqualValues(t, 2, auditCount(t, c.Store, ws, "user.update", rita.ID))

	// Deleted, with the box ticked.
	cl.get("/users/" + rita.ID)
	p = cl.post("/users/"+rita.ID+"/delete", nil)
	require.Equal(t, http.StatusBadRequest, p.Status, p.Body)
	require.Contains(t, p.Body, `<span class="field-error" role="alert">tick the box`)
	p = cl.post("/users/"+rita.ID+"/delete", url.Values{"confirm": {"yes"}})
	require.Equal(t, http.StatusSeeOther, p.Status, p.Body)
	require.Equal(t, "/users?notice=user_deleted", p.Header.Get("Location"))
	require.EqualValues(t, 1, auditCount(t, c.Store, ws, "user.delete", rita.ID))
	require.Equal(t, http.StatusNotFound, cl.get("/users/"+rita.ID).Status)
	var ottoID string
	require.NoError(t, c.Store.DB.Model(&models.User{}).Where("workspace_id = ? AND email = ?", ws, other).Pluck("id", &ottoID).Error)
	cl.get("/users/" + ottoID)
	require.Equal(t, http.StatusSeeOther, cl.post("/users/"+ottoID+"/delete", url.Values{"confirm": {"yes"}}).Status)

	// The last admin: neither demoted nor deleted, by themselves or anyone.
	cl.get("/users/" + me.ID)
	p = cl.post("/users/"+me.ID, url.Values{"email": {me.Email}, "name": {me.Name}, "role": {"reviewer"}})
	require.Equal(t, http.StatusConflict, p.Status, p.Body)
	require.Contains(t, p.Body, `<option value="reviewer" selected>`, "the input is kept")
	require.Contains(t, p.Body, `<span class="field-error" role="alert">`+me.Email+` is the workspace&#39;s last admin and cannot be made reviewer`)
	p = cl.post("/users/"+me.ID+"/delete", url.Values{"confirm": {"yes"}})
	require.Equal(t, http.StatusConflict, p.Status, p.Body)
	require.Contains(t, p.Body, "last admin and cannot be deleted")
	var still models.User
	require.NoError(t, c.Store.DB.Take(&still, "id = ?", me.ID).Error)
	require.Equal(t, models.RoleAdmin, still.Role)
	require.Equal(t, http.StatusOK, cl.get("/").Status, "still signed in as an admin")
}

// TestAnAdminWhoDemotesThemselvesLandsOnTheReviewPages: with another admin
// in the workspace an admin may make themselves a reviewer; the form then
// leads to the review pages, the only ones left to them.
func TestAnAdminWhoDemotesThemselvesLandsOnTheReviewPages(t *testing.T) {
	t.Parallel()
	c := newTestConsole(t)
	me := c.Tenant.Admin
	_, err := c.P.Admin.CreateUser(context.Background(), c.Tenant.Workspace.ID, "test", adminInput("other-"+strings.ToLower(models.NewID()[:8])+"@example.test", models.RoleAdmin))
	require.NoError(t, err)
	cl := c.signedIn(t)
	cl.get("/users/" + me.ID)
	p := cl.post("/users/"+me.ID, url.Values{"email": {me.Email}, "name": {me.Name}, "role": {"reviewer"}})
	require.Equal(t, http.StatusSeeOther, p.Status, p.Body)
	require.Equal(t, "/review", p.Header.Get("Location"))
	require.Equal(t, http.StatusForbidden, cl.get("/users").Status)
	require.Equal(t, http.StatusOK, cl.get("/review").Status)
}
