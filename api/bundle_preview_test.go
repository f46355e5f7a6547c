package api_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/appruntime/appruntime/internal/artifact"
	"github.com/appruntime/appruntime/internal/bindingspec"
	"github.com/appruntime/appruntime/internal/store"
	"github.com/appruntime/appruntime/internal/testkit"
	"github.com/appruntime/appruntime/models"
)

// TestBundlePreviewSessions mints preview sessions through the admin API
// (its refusals, its audit row) and calls every verb with one, on Postgres
// and on the dev mode's SQLite: task-free reads are served with real rows;
// everything else is 403 "preview sessions are read-only", and writes
// nothing. The task's own session is unaffected.
func TestBundlePreviewSessions(t *testing.T) {
	t.Parallel()
	for name, open := range map[string]func(testing.TB) *store.Store{"postgres": testkit.Schema, "sqlite": testkit.SQLite} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			f := newRuntimeFixtureWith(t, open(t), testkit.Redis(t), func(dsn string) string { return dsn })
			generousRate(f.api)
			ws := f.tenant.Workspace.ID
			var bun models.Bundle
			require.NoError(t, f.db().Where("workspace_id = ?", ws).Take(&bun).Error)
			// A binding with a read scoped to the task, beside the unscoped one.
			spec := fixtureSpec()
			spec.Reads = append(spec.Reads, bindingspec.Read{Op: "task_decisions", Table: "decisions", Columns: []string{"id", "decision"},
				FixedFilters: map[string]any{"task_id": "{{task_id}}"}})
			raw, err := json.Marshal(spec)
			require.NoError(t, err)
			var integ models.Integration
			require.NoError(t, f.db().Where("workspace_id = ?", ws).Take(&integ).Error)
			b, err := f.api.P.Bindings.Create(context.Background(), ws, "test", bindingspec.Input{
				Name: "scoped", BindingKind: bindingspec.KindPostgres, IntegrationID: integ.ID, AllowedOperations: raw})
			require.NoError(t, err)
			other := testkit.NewTenant(t, f.db())

			path := "/api/admin/bundles/" + bun.ID + "/versions/1/preview-sessions"
			body := map[string]string{"binding_id": b.ID}
			for _, c := range []struct {
				name, path, token string
				body              any
				status            int
			}{
				{"no token", path, "", body, 401},
				{"a host token (not admin scope)", path, f.tenant.HostToken, body, 401},
				{"another workspace's admin", path, other.AdminToken, body, 404},
				{"a missing version", "/api/admin/bundles/" + bun.ID + "/versions/9/preview-sessions", f.tenant.AdminToken, body, 404},
				{"a missing binding", path, f.tenant.AdminToken, map[string]string{"binding_id": models.NewID()}, 404},
				{"a binding id that is no UUID", path, f.tenant.AdminToken, map[string]string{"binding_id": "demo"}, 400},
				{"an unknown field", path, f.tenant.AdminToken, map[string]string{"binding_id": b.ID, "task_id": f.taskID}, 400},
			} {
				r := f.api.call(t, "POST", c.path, c.token, c.body)
				require.Equal(t, c.status, r.Status, "%s: %s", c.name, r.Raw)
			}
			var n int64
			require.NoError(t, f.db().Model(&models.AppSession{}).Where("kind = ?", models.SessionPreview).Count(&n).Error)
			require.Zero(t, n, "no refusal minted")

			r := f.api.call(t, "POST", path, f.tenant.AdminToken, body)
			require.Equal(t, 201, r.Status, string(r.Raw))
			require.Equal(t, "preview", r.Body["kind"])
			require.Equal(t, b.ID, r.Body["binding_id"])
			require.Equal(t, []any{"read"}, r.Body["init"].(map[string]any)["runtime"].(map[string]any)["verbs"])
			token, sessionID := r.Body["session_token"].(string), r.Body["session_id"].(string)
			var audits int64
			require.NoError(t, f.db().Model(&models.AuditEntry{}).Where("workspace_id = ? AND action = ? AND target_id = ?",
				ws, artifact.AuditSessionPreview, sessionID).Count(&audits).Error)
			require.Equal(t, int64(1), audits)

			const readOnly = "preview sessions are read-only"
			for _, c := range []struct {
				verb   string
				body   any
				status int
				says   string
			}{
				{"read", map[string]any{"op": "list_invoices"}, 200, ""},
				{"read", map[string]any{"op": "task_decisions"}, 403, readOnly + " and on no task: op \"task_decisions\" is scoped to the task ({{task_id}})"},
				{"read", map[string]any{"op": "no_such_op"}, 403, "not allowed"},
				{"write", map[string]any{"op": "set_status", "payload": map[string]any{"row": map[string]any{"id": 1, "status": "on_hold"}}}, 403, readOnly + ": /write is refused"},
				{"action", map[string]any{"op": "approve", "await_id": f.awaitID}, 403, readOnly + ": /action is refused"},
				{"run", map[string]any{"op": "translate", "payload": map[string]any{"texts": []string{"hi"}, "target_language": "fr"}}, 403, readOnly + ": /run is refused"},
				{"capability", map[string]any{"op": "list_files"}, 403, readOnly + " and on no task"},
			} {
				r := f.api.call(t, "POST", "/api/app-runtime/"+c.verb, token, c.body)
				require.Equal(t, c.status, r.Status, "%s %v: %s", c.verb, c.body, r.Raw)
				if c.says != "" {
					require.Contains(t, r.Body["error"], c.says)
				} else {
					require.Len(t, r.Body["rows"], 2, "real rows, at the op's limit")
				}
			}
			var status string
			require.NoError(t, f.source.DB.Raw(`SELECT status FROM invoices WHERE id = 1`).Scan(&status).Error)
			require.Equal(t, "pending", status, "nothing written")
			var await models.TaskAwait
			require.NoError(t, f.db().Where("id = ?", f.awaitID).Take(&await).Error)
			require.Equal(t, models.AwaitPending, await.Status, "the task stays parked")

			// The task's own session still writes.
			w := f.verb(t, "write", map[string]any{"op": "set_status", "payload": map[string]any{"row": map[string]any{"id": 1, "status": "on_hold"}}})
			require.Equal(t, 200, w.Status, string(w.Raw))
		})
	}
}
