package e2e_test

import (
	"fmt"
	"os/exec"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/appruntime/appruntime/internal/testkit"
	"github.com/appruntime/appruntime/models"
)

// TestTheClusterWalkThroughAnswersARun is the operators' Redis Cluster
// walk-through (docs/operators.md#redis-sentinel-and-cluster) as processes:
// `appruntime migrate`, then `api` and `worker` with
// REDIS_URL=redis-cluster://… naming a three-master cluster's nodes; an
// admin sets up a tool through the api, and a /run of its translate op is
// answered by the worker.
func TestTheClusterWalkThroughAnswersARun(t *testing.T) {
	t.Parallel()
	fs := newFaultStack(t)
	cluster := testkit.SharedCluster(t)
	engine := testkit.NewLibreTranslate(t)
	for i, kv := range fs.env {
		if strings.HasPrefix(kv, "REDIS_URL=") {
			fs.env[i] = "REDIS_URL=" + cluster.URL
		}
	}
	fs.env = append(fs.env, "TRANSLATE_URL="+engine.URL)

	migrate := exec.Command(appruntimeBinary(t), "migrate")
	migrate.Env = fs.env
	out, err := migrate.CombinedOutput()
	require.NoError(t, err, "appruntime migrate: %s", out)
	fs.start(t, "api")
	fs.start(t, "worker")

	require.NoError(t, fs.store.DB.Model(&models.Agent{}).Where("id = ?", fs.tenant.Agent.ID).
		Update("document_translation_enabled", true).Error)
	admin := fs.tenant.AdminToken
	integ := fs.must(t, 201, "POST", "/api/admin/integrations", admin, map[string]any{
		"name": "Source", "kind": "postgres", "secrets": map[string]any{"dsn": testkit.URLOf(fs.source)},
	})
	b := fs.must(t, 201, "POST", "/api/admin/bindings", admin, map[string]any{
		"name": "Translate", "binding_kind": "postgres", "integration_id": integ["id"], "allowed_operations": map[string]any{
			"tools": []any{map[string]any{"op": "translate", "tool": "translate_text", "params": []string{"texts", "target_language"}}},
		},
	})
	bundle := fs.must(t, 201, "POST", "/api/admin/bundles?name=cluster", admin, []byte(bundleHTML), "text/html")
	tool := fs.must(t, 201, "POST", "/api/admin/configured-tools", admin, map[string]any{
		"agent_id": fs.tenant.Agent.ID, "display_name": "Cluster app", "base_tool": "app_tool",
		"bundle_id": bundle["id"], "binding_id": b["id"],
	})
	_, session := fs.appStep(t, fs.tenant.AgentToken, tool["id"].(string))
	for _, text := range []string{"hello", "cluster"} {
		r := fs.must(t, 200, "POST", "/api/app-runtime/run", session, map[string]any{
			"op": "translate", "payload": map[string]any{"texts": []string{text}, "target_language": "de"},
		})
		require.Equal(t, "ok", r["status"], "%v", r)
		require.Contains(t, fmt.Sprint(r["output"]), "[de] "+strings.ToUpper(text))
	}
	require.EqualValues(t, 2, engine.Requests(), "each run ran once")
}
