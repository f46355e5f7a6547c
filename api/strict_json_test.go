package api_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/appruntime/appruntime/internal/testkit"
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
