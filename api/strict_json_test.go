package api_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/appruntime/appruntime/internal/testkit"
	"github.com/appruntime/appruntime/models"
)

// TestAKeyTwiceIsRefusedEverywhere: no API reads a JSON body in which one
// object names a key twice; which copy a reader keeps is a parser's choice,
// and two readers (a proxy and us) may choose differently.
func TestAKeyTwiceIsRefusedEverywhere(t *testing.T) {
	t.Parallel()
	a := newTestAPI(t)
	tn := testkit.NewTenant(t, a.Store.DB)
	for _, tc := range []struct {
		name, method, path, token, body, dup string
	}{
		{"a user", "POST", "/api/admin/users", tn.AdminToken,
			`{"email":"a@example.test","role":"reviewer","role":"admin","password":"long enough"}`, "role"},
		{"a user patch", "PATCH", "/api/admin/users/" + tn.Admin.ID, tn.AdminToken, `{"role":"admin","role":"reviewer"}`, "role"},
		{"a token", "POST", "/api/admin/tokens", tn.AdminToken, `{"scope":"agent","scope":"admin"}`, "scope"},
		{"a binding", "POST", "/api/admin/bindings", tn.AdminToken,
			`{"name":"b","binding_kind":"postgres","allowed_operations":{"reads":[],"reads":[{"op":"x"}]}}`, "allowed_operations.reads"},
		{"a task", "POST", "/api/agent/tasks", tn.AgentToken, `{"title":"a","priority":1,"priority":9}`, "priority"},
		{"a mint", "POST", "/api/app-tools/sessions", tn.HostToken, `{"step_id":"x","step_id":"y"}`, "step_id"},
	} {
		r := a.call(t, tc.method, tc.path, tc.token, tc.body)
		require.Equal(t, 400, r.Status, "%s: %s", tc.name, r.Raw)
		require.Contains(t, r.Body["error"], `invalid JSON: duplicate key "`+tc.dup+`"`, tc.name)
	}
}

// TestANULIsRefusedEverywhere: no Postgres text or jsonb value can hold
// U+0000, so a body with one is the client's 400, never a 500 from deep in
// a write (the platform's tables or a data source's).
func TestANULIsRefusedEverywhere(t *testing.T) {
	t.Parallel()
	f := newRuntimeFixture(t)
	for _, tc := range []struct {
		name, path, token, body string
	}{
		{"a task title", "/api/agent/tasks", f.tenant.AgentToken, `{"title":"a\u0000b"}`},
		{"a user", "/api/admin/users", f.tenant.AdminToken, `{"email":"n@example.test","role":"reviewer","password":"long enough\u0000"}`},
		{"a /write row", "/api/app-runtime/write", f.token, `{"op":"set_status","payload":{"row":{"id":1,"status":"paid\u0000"}}}`},
		{"an /action row", "/api/app-runtime/action", f.token, `{"op":"note_only","payload":{"rows":{"record_decision":{"decision":"\u0000"}}}}`},
		{"a /read filter", "/api/app-runtime/read", f.token, `{"op":"list_invoices","payload":{"filters":{"vendor":"\u0000"}}}`},
	} {
		r := f.api.call(t, "POST", tc.path, tc.token, tc.body)
		require.Equal(t, 400, r.Status, "%s: %s", tc.name, r.Raw)
		require.Contains(t, r.Body["error"], `a string holds \u0000 (NUL), which cannot be stored`, tc.name)
	}
	var feed int64
	require.NoError(t, f.db().Model(&models.FeedEvent{}).Where("task_id = ? AND type = ?", f.taskID, models.FeedAgentAction).Count(&feed).Error)
	require.Zero(t, feed, "nothing was written")
}
