package console_test

import (
	"net/http"
	"net/url"
	"regexp"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/appruntime/appruntime/models"
)

// TestReviewPoolNotificationsForm: an admin sets a pool's thresholds,
// escalation target, webhook and addresses on the Review pools page; the
// first webhook URL's signing secret is shown once; a refusal names its
// field in that pool's form and changes nothing; blank fields turn it off.
func TestReviewPoolNotificationsForm(t *testing.T) {
	t.Parallel()
	c := newTestConsole(t)
	cl := c.signedIn(t)
	ws := c.Tenant.Workspace.ID
	for _, name := range []string{"invoices", "seniors"} {
		p := cl.post("/review-pools", url.Values{"name": {name}})
		require.Equal(t, http.StatusSeeOther, p.Status, p.Body)
	}
	pool := func(name string) models.ReviewPool {
		var p models.ReviewPool
		require.NoError(t, c.Store.DB.Take(&p, "workspace_id = ? AND name = ?", ws, name).Error)
		return p
	}
	invoices, seniors := pool("invoices"), pool("seniors")

	p := cl.get("/review-pools")
	require.Equal(t, http.StatusOK, p.Status, p.Body)
	require.Contains(t, p.Body, `action="/review-pools/`+invoices.ID+`/notify"`)

	form := url.Values{"wait_threshold_seconds": {"300"}, "escalate_after_seconds": {"120"}, "escalate_to_pool_id": {seniors.ID},
		"notify_webhook_url": {"https://hooks.example.test/pools"}, "notify_emails": {"lead@example.test, ops@example.test"}}
	p = cl.post("/review-pools/"+invoices.ID+"/notify", form)
	require.Equal(t, http.StatusBadRequest, p.Status, p.Body)
	require.Contains(t, p.Body, `<span class="field-error" role="alert">escalate_after_seconds (120) must be longer than wait_threshold_seconds (300)</span>`)
	require.Nil(t, pool("invoices").WaitThresholdSeconds, "a refused form changes nothing")

	form.Set("escalate_after_seconds", "3600")
	p = cl.post("/review-pools/"+invoices.ID+"/notify", form)
	require.Equal(t, http.StatusOK, p.Status, p.Body)
	require.Regexp(t, regexp.MustCompile(`<code class="secret">whsec_[^<]+</code>`), p.Body)
	got := pool("invoices")
	require.Equal(t, 300, *got.WaitThresholdSeconds)
	require.Equal(t, 3600, *got.EscalateAfterSeconds)
	require.Equal(t, seniors.ID, *got.EscalateToPoolID)
	require.Equal(t, "lead@example.test,ops@example.test", got.NotifyEmails)
	require.NotEmpty(t, got.NotifyWebhookSecretEnc)
	require.EqualValues(t, 1, auditCount(t, c.Store, ws, "review_pool.update", invoices.ID))

	p = cl.get("/review-pools")
	require.NotContains(t, p.Body, `class="secret"`, "the secret is shown once")
	require.Contains(t, p.Body, `name="wait_threshold_seconds" min="60" max="2592000" value="300"`)
	require.Contains(t, p.Body, `<option value="`+seniors.ID+`" selected>seniors</option>`)
	require.Contains(t, p.Body, `value="lead@example.test, ops@example.test"`)

	p = cl.post("/review-pools/"+invoices.ID+"/notify", url.Values{"notify_webhook_url": {"https://hooks.example.test/pools"}})
	require.Equal(t, http.StatusSeeOther, p.Status, p.Body)
	got = pool("invoices")
	require.Nil(t, got.WaitThresholdSeconds)
	require.Nil(t, got.EscalateToPoolID)
	require.Empty(t, got.NotifyEmails)
}
