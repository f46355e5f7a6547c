package api_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/appruntime/appruntime/internal/testkit"
	"github.com/appruntime/appruntime/models"
)

// TestReviewPoolNotificationSettingsOverHTTP: an admin sets a pool's wait
// and escalation thresholds, target pool, webhook and addresses; the first
// webhook URL brings a signing secret shown once, and a rotation a new one.
// Bad settings are refused with 400 and change nothing; another
// workspace's pool is no target.
func TestReviewPoolNotificationSettingsOverHTTP(t *testing.T) {
	t.Parallel()
	a := newTestAPI(t)
	tn := testkit.NewTenant(t, a.Store.DB)
	other := testkit.NewTenant(t, a.Store.DB)
	r := a.call(t, "POST", "/api/admin/review-pools", tn.AdminToken, map[string]any{"name": "seniors"})
	require.Equal(t, 201, r.Status, "%s", r.Raw)
	seniors := admID(t, r)
	require.Nil(t, r.Body["wait_threshold_seconds"])
	require.Equal(t, false, r.Body["notify_webhook_secret_set"])
	r = a.call(t, "POST", "/api/admin/review-pools", other.AdminToken, map[string]any{"name": "theirs"})
	require.Equal(t, 201, r.Status, "%s", r.Raw)
	theirs := admID(t, r)

	r = a.call(t, "POST", "/api/admin/review-pools", tn.AdminToken, map[string]any{"name": "invoices",
		"wait_threshold_seconds": 300, "notify_emails": []string{"lead@example.test"}})
	require.Equal(t, 201, r.Status, "%s", r.Raw)
	pool := admID(t, r)
	require.EqualValues(t, 300, r.Body["wait_threshold_seconds"])
	require.Equal(t, []any{"lead@example.test"}, r.Body["notify_emails"])

	for _, bad := range []map[string]any{
		{"wait_threshold_seconds": 59},
		{"wait_threshold_seconds": 2592001},
		{"escalate_after_seconds": 900},                                 // no target
		{"escalate_to_pool_id": seniors},                                // no threshold
		{"escalate_after_seconds": 900, "escalate_to_pool_id": pool},    // itself
		{"escalate_after_seconds": 900, "escalate_to_pool_id": theirs},  // another workspace's
		{"escalate_after_seconds": 120, "escalate_to_pool_id": seniors}, // not past the wait threshold
		{"notify_webhook_url": "ftp://example.test/hook"},               // not http(s)
		{"notify_emails": []string{"Lead <lead@example.test>"}},         // not bare
		{"notify_emails": []string{"a@example.test", "A@example.test"}}, // twice
		{"wait_threshold_seconds": "soon"},                              // not a number
	} {
		r = a.call(t, "PATCH", "/api/admin/review-pools/"+pool, tn.AdminToken, bad)
		require.Equal(t, 400, r.Status, "%v: %s", bad, r.Raw)
	}
	r = a.call(t, "GET", "/api/admin/review-pools/"+pool, tn.AdminToken, nil)
	require.EqualValues(t, 300, r.Body["wait_threshold_seconds"], "a refused patch changes nothing")
	require.Nil(t, r.Body["escalate_to_pool_id"])

	r = a.call(t, "PATCH", "/api/admin/review-pools/"+pool, tn.AdminToken, map[string]any{
		"escalate_after_seconds": 3600, "escalate_to_pool_id": seniors, "notify_webhook_url": "https://hooks.example.test/pools"})
	require.Equal(t, 200, r.Status, "%s", r.Raw)
	require.EqualValues(t, 3600, r.Body["escalate_after_seconds"])
	require.Equal(t, seniors, r.Body["escalate_to_pool_id"])
	require.Equal(t, true, r.Body["notify_webhook_secret_set"])
	first, _ := r.Body["notify_webhook_secret"].(string)
	require.Regexp(t, `^whsec_`, first, "the new webhook's secret is shown once")
	r = a.call(t, "GET", "/api/admin/review-pools/"+pool, tn.AdminToken, nil)
	require.Nil(t, r.Body["notify_webhook_secret"])
	require.Equal(t, "invoices", r.Body["name"], "a settings patch keeps the name")

	r = a.call(t, "POST", "/api/admin/review-pools/"+pool+"/webhook-secret/rotate", tn.AdminToken, nil)
	require.Equal(t, 200, r.Status, "%s", r.Raw)
	second, _ := r.Body["notify_webhook_secret"].(string)
	require.Regexp(t, `^whsec_`, second)
	require.NotEqual(t, first, second)
	r = a.call(t, "POST", "/api/admin/review-pools/"+pool+"/webhook-secret/rotate", other.AdminToken, nil)
	require.Equal(t, 404, r.Status, "%s", r.Raw)
	r = a.call(t, "POST", "/api/admin/review-pools/"+seniors+"/webhook-secret/rotate", tn.AdminToken, nil)
	require.Equal(t, 400, r.Status, "a pool without a webhook has no secret to rotate: %s", r.Raw)

	// Off again: null thresholds, no target.
	r = a.call(t, "PATCH", "/api/admin/review-pools/"+pool, tn.AdminToken, map[string]any{
		"wait_threshold_seconds": nil, "escalate_after_seconds": nil, "escalate_to_pool_id": nil})
	require.Equal(t, 200, r.Status, "%s", r.Raw)
	require.Nil(t, r.Body["wait_threshold_seconds"])
	require.Nil(t, r.Body["escalate_to_pool_id"])
	var audited int64
	require.NoError(t, a.Store.DB.Model(&models.AuditEntry{}).Where("workspace_id = ? AND action = ?", tn.Workspace.ID,
		"review_pool.rotate_webhook_secret").Count(&audited).Error)
	require.Equal(t, int64(1), audited)
}
