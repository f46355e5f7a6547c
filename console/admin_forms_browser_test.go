package console_test

import (
	"context"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"

	"github.com/appruntime/appruntime/internal/testkit/browser"
	"github.com/appruntime/appruntime/models"
)

// text reads the text of the element sel.
func text(t *testing.T, ctx context.Context, sel string) string {
	t.Helper()
	v, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS(sel)))
	require.NoError(t, err, sel)
	return v
}

// value reads the value of the form control sel.
func value(t *testing.T, ctx context.Context, sel string) string {
	t.Helper()
	v, err := chromedp.Run(ctx, chromedp.Value(chromedp.CSS(sel)))
	require.NoError(t, err, sel)
	return v
}

// TestAgentFormsInTheBrowser creates an agent in Chromium (a refused URL
// first: the input stays, the message stands beside the field), copies its
// secret, edits it with an error then without, and deletes it.
func TestAgentFormsInTheBrowser(t *testing.T) {
	t.Parallel()
	ctx := browser.New(t)
	s := newStack(t)
	db := s.Store.DB
	signInAt(t, ctx, s, "/agents", `#agent-create input[name="name"]`)

	require.NoError(t, chromedp.Do(ctx,
		chromedp.SendKeys(chromedp.CSS(`#agent-create input[name="name"]`), "Browser agent"),
		chromedp.SendKeys(chromedp.CSS(`#agent-create input[name="resume_webhook_url"]`), "https://user:pw@hooks.example.com/resume"),
		chromedp.Click(chromedp.CSS(`#agent-create button[type="submit"]`)),
		chromedp.WaitVisible(chromedp.CSS(`#agent-create .field-error`)),
	))
	require.Contains(t, text(t, ctx, `#agent-create .field-error`), "resume_webhook_url may not carry credentials")
	require.Equal(t, "Browser agent", value(t, ctx, `#agent-create input[name="name"]`))
	require.Equal(t, "https://user:pw@hooks.example.com/resume", value(t, ctx, `#agent-create input[name="resume_webhook_url"]`))

	require.NoError(t, chromedp.Do(ctx,
		chromedp.SetValue(chromedp.CSS(`#agent-create input[name="resume_webhook_url"]`), "https://hooks.example.com/resume"),
		chromedp.Click(chromedp.CSS(`#agent-create button[type="submit"]`)),
		chromedp.WaitVisible(chromedp.CSS(`#webhook-secret`)),
	))
	require.NotEmpty(t, strings.TrimSpace(text(t, ctx, `#webhook-secret`)))
	var ag models.Agent
	require.NoError(t, db.Where("workspace_id = ? AND name = ?", s.Tenant.Workspace.ID, "Browser agent").Take(&ag).Error)

	// Edit: a refused URL keeps both fields; then the save.
	require.NoError(t, chromedp.Do(ctx,
		chromedp.Click(chromedp.CSS(`a[href="/agents/`+ag.ID+`"]`)),
		chromedp.WaitVisible(chromedp.CSS(`#agent-edit`)),
		chromedp.SetValue(chromedp.CSS(`#agent-edit input[name="name"]`), "Renamed agent"),
		chromedp.SetValue(chromedp.CSS(`#agent-edit input[name="resume_webhook_url"]`), "https://hooks.example.com/resume#frag"),
		chromedp.Click(chromedp.CSS(`#agent-edit button[type="submit"]`)),
		chromedp.WaitVisible(chromedp.CSS(`#agent-edit .field-error`)),
	))
	require.Contains(t, text(t, ctx, `#agent-edit .field-error`), "resume_webhook_url may not have a #fragment")
	require.Equal(t, "Renamed agent", value(t, ctx, `#agent-edit input[name="name"]`))
	require.NoError(t, chromedp.Do(ctx,
		chromedp.SetValue(chromedp.CSS(`#agent-edit input[name="resume_webhook_url"]`), "https://hooks.example.com/v2"),
		chromedp.Click(chromedp.CSS(`#agent-edit button[type="submit"]`)),
		chromedp.WaitVisible(chromedp.CSS(`.notice`)),
	))
	require.NoError(t, db.Take(&ag, "id = ?", ag.ID).Error)
	require.Equal(t, "Renamed agent", ag.Name)
	require.Equal(t, "https://hooks.example.com/v2", ag.ResumeWebhookURL)

	// Delete, confirmed.
	require.Contains(t, text(t, ctx, `#agent-delete`), "also deletes its tasks")
	require.NoError(t, chromedp.Do(ctx,
		chromedp.Click(chromedp.CSS(`#agent-delete input[name="confirm"]`)),
		chromedp.Click(chromedp.CSS(`#agent-delete button[type="submit"]`)),
		chromedp.WaitVisible(chromedp.CSS(`#agent-create`)),
	))
	require.Contains(t, text(t, ctx, `.notice`), "The agent was deleted")
	require.Error(t, db.Take(&models.Agent{}, "id = ?", ag.ID).Error, "the agent is gone")
}

// TestUserFormsInTheBrowser creates a reviewer with a generated password in
// Chromium, is refused a second user with the same email (the input stays,
// the email named), edits the reviewer with an error then without, and
// deletes them.
func TestUserFormsInTheBrowser(t *testing.T) {
	t.Parallel()
	ctx := browser.New(t)
	s := newStack(t)
	db := s.Store.DB
	email := "browser-" + strings.ToLower(models.NewID()[:8]) + "@example.test"
	signInAt(t, ctx, s, "/users", `#user-create input[name="email"]`)

	require.NoError(t, chromedp.Do(ctx,
		chromedp.SendKeys(chromedp.CSS(`#user-create input[name="email"]`), email),
		chromedp.SendKeys(chromedp.CSS(`#user-create input[name="name"]`), "Bea Browser"),
		chromedp.Click(chromedp.CSS(`#user-create button[type="submit"]`)),
		chromedp.WaitVisible(chromedp.CSS(`#user-password-secret`)),
	))
	password := strings.TrimSpace(text(t, ctx, `#user-password-secret`))
	require.GreaterOrEqual(t, len(password), 20)
	var u models.User
	require.NoError(t, db.Where("workspace_id = ? AND email = ?", s.Tenant.Workspace.ID, email).Take(&u).Error)
	require.Equal(t, models.RoleReviewer, u.Role)

	// The same email again: 409, the input kept, the email named.
	require.NoError(t, chromedp.Do(ctx,
		chromedp.Navigate(s.URL+"/users"),
		chromedp.WaitVisible(chromedp.CSS(`#user-create`)),
		chromedp.SendKeys(chromedp.CSS(`#user-create input[name="email"]`), email),
		chromedp.SendKeys(chromedp.CSS(`#user-create input[name="name"]`), "Bea Twin"),
		chromedp.SetValue(chromedp.CSS(`#user-create select[name="role"]`), "admin"),
		chromedp.Click(chromedp.CSS(`#user-create button[type="submit"]`)),
		chromedp.WaitVisible(chromedp.CSS(`#user-create .field-error`)),
	))
	require.Contains(t, text(t, ctx, `#user-create .field-error`), "a user with email "+email+" already exists")
	require.Equal(t, "Bea Twin", value(t, ctx, `#user-create input[name="name"]`))
	require.Equal(t, "admin", value(t, ctx, `#user-create select[name="role"]`))

	// Edit: a refused name (a tab in it) keeps the input; then the role change.
	require.NoError(t, chromedp.Do(ctx,
		chromedp.Click(chromedp.CSS(`a[href="/users/`+u.ID+`"]`)),
		chromedp.WaitVisible(chromedp.CSS(`#user-edit`)),
		chromedp.SetValue(chromedp.CSS(`#user-edit input[name="name"]`), "Bea\tB."),
		chromedp.SetValue(chromedp.CSS(`#user-edit select[name="role"]`), "admin"),
		chromedp.Click(chromedp.CSS(`#user-edit button[type="submit"]`)),
		chromedp.WaitVisible(chromedp.CSS(`#user-edit .field-error`)),
	))
	require.Contains(t, text(t, ctx, `#user-edit .field-error`), "name may not contain control characters")
	require.Equal(t, "Bea\tB.", value(t, ctx, `#user-edit input[name="name"]`))
	require.Equal(t, "admin", value(t, ctx, `#user-edit select[name="role"]`))
	require.NoError(t, chromedp.Do(ctx,
		chromedp.SetValue(chromedp.CSS(`#user-edit input[name="name"]`), "Bea B."),
		chromedp.Click(chromedp.CSS(`#user-edit button[type="submit"]`)),
		chromedp.WaitVisible(chromedp.CSS(`.notice`)),
	))
	require.NoError(t, db.Take(&u, "id = ?", u.ID).Error)
	require.Equal(t, models.RoleAdmin, u.Role)
	require.Equal(t, "Bea B.", u.Name)

	// Delete, confirmed.
	require.NoError(t, chromedp.Do(ctx,
		chromedp.Click(chromedp.CSS(`#user-delete input[name="confirm"]`)),
		chromedp.Click(chromedp.CSS(`#user-delete button[type="submit"]`)),
		chromedp.WaitVisible(chromedp.CSS(`#user-create`)),
	))
	require.Contains(t, text(t, ctx, `.notice`), "The user was deleted")
	require.Error(t, db.Take(&models.User{}, "id = ?", u.ID).Error, "the user is gone")
}
