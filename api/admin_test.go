package api_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/appruntime/appruntime/internal/admin"
	"github.com/appruntime/appruntime/internal/auth"
	"github.com/appruntime/appruntime/internal/crypt"
	"github.com/appruntime/appruntime/internal/testkit"
	"github.com/appruntime/appruntime/internal/webhook"
	"github.com/appruntime/appruntime/models"
)

// admAudit returns the audit actions recorded on a target, oldest first.
func admAudit(t *testing.T, a *testAPI, targetID string) []string {
	t.Helper()
	var actions []string
	require.NoError(t, a.Store.DB.Model(&models.AuditEntry{}).Where("target_id = ?", targetID).
		Order("created_at, id").Pluck("action", &actions).Error)
	return actions
}

// admID returns the "id" of a reply.
func admID(t *testing.T, r response) string {
	t.Helper()
	id, ok := r.Body["id"].(string)
	require.True(t, ok, "reply has an id: %s", r.Raw)
	return id
}

// admList returns the items of a list reply {"<key>": [...]}.
func admList(t *testing.T, r response, key string) []map[string]any {
	t.Helper()
	require.Equal(t, 200, r.Status, "%s", r.Raw)
	raw, ok := r.Body[key].([]any)
	require.True(t, ok, "reply has %q: %s", key, r.Raw)
	out := make([]map[string]any, 0, len(raw))
	for _, it := range raw {
		out = append(out, it.(map[string]any))
	}
	return out
}

func TestAdminRoutesNeedAnAdminToken(t *testing.T) {
	t.Parallel()
	a := newTestAPI(t)
	tn := testkit.NewTenant(t, a.Store.DB)
	id := models.NewID()
	routes := [][2]string{
		{"GET", "/api/admin/workspaces"}, {"POST", "/api/admin/workspaces"}, {"PATCH", "/api/admin/workspaces/" + tn.Workspace.ID},
		{"GET", "/api/admin/agents"}, {"POST", "/api/admin/agents"}, {"GET", "/api/admin/agents/" + tn.Agent.ID},
		{"DELETE", "/api/admin/agents/" + tn.Agent.ID}, {"POST", "/api/admin/agents/" + id + "/webhook-secret/rotate"},
		{"GET", "/api/admin/integrations"}, {"POST", "/api/admin/integrations"}, {"PUT", "/api/admin/integrations/" + id},
		{"GET", "/api/admin/users"}, {"POST", "/api/admin/users"}, {"DELETE", "/api/admin/users/" + tn.Admin.ID},
		{"GET", "/api/admin/tokens"}, {"POST", "/api/admin/tokens"}, {"DELETE", "/api/admin/tokens/" + id},
		{"GET", "/api/admin/configured-tools"}, {"POST", "/api/admin/configured-tools"}, {"PATCH", "/api/admin/configured-tools/" + id},
		{"GET", "/api/admin/bundles"}, {"POST", "/api/admin/bundles?name=x"}, {"POST", "/api/admin/bundles/" + id + "/versions"},
	}
	for _, token := range []struct{ name, value string }{
		{"no token", ""}, {"garbage", "nope"}, {"host token", tn.HostToken}, {"agent token", tn.AgentToken},
		{"admin-looking forgery", "art_admin_forged"},
	} {
		for _, rt := range routes {
			r := a.call(t, rt[0], rt[1], token.value, `{"name":"x"}`)
			require.Equal(t, 401, r.Status, "%s %s with %s: %s", rt[0], rt[1], token.name, r.Raw)
			require.Equal(t, "a valid admin token is required", r.Body["error"])
		}
	}
	var agents int64
	a.Store.DB.Model(&models.Agent{}).Where("id = ?", tn.Agent.ID).Count(&agents)
	require.EqualValues(t, 1, agents, "nothing was deleted")
}

func TestAdminAcrossWorkspacesIsNotFound(t *testing.T) {
	t.Parallel()
	a := newTestAPI(t)
	mine := testkit.NewTenant(t, a.Store.DB)
	theirs := newAppToolFixture(t, a.Store.DB)
	var theirToken models.APIToken
	require.NoError(t, a.Store.DB.Where("workspace_id = ? AND scope = ?", theirs.Tenant.Workspace.ID, models.ScopeHost).Take(&theirToken).Error)
	for _, path := range []string{
		"/api/admin/workspaces/" + theirs.Tenant.Workspace.ID,
		"/api/admin/agents/" + theirs.Tenant.Agent.ID,
		"/api/admin/integrations/" + theirs.Integration.ID,
		"/api/admin/users/" + theirs.Tenant.Admin.ID,
		"/api/admin/tokens/" + theirToken.ID,
		"/api/admin/configured-tools/" + theirs.Tool.ID,
		"/api/admin/bundles/" + theirs.Bundle.ID,
	} {
		for _, method := range []string{"GET", "PATCH", "DELETE"} {
			if strings.Contains(path, "/tokens/") && method == "PATCH" || strings.Contains(path, "/bundles/") && method == "PATCH" {
				continue
			}
			r := a.call(t, method, path, mine.AdminToken, `{"name":"stolen"}`)
			require.Equal(t, 404, r.Status, "%s %s: %s", method, path, r.Raw)
			require.Contains(t, r.Body["error"], "not found")
		}
	}
	r := a.call(t, "POST", "/api/admin/agents/"+theirs.Tenant.Agent.ID+"/webhook-secret/rotate", mine.AdminToken, nil)
	require.Equal(t, 404, r.Status)
	r = a.call(t, "POST", "/api/admin/bundles/"+theirs.Bundle.ID+"/versions", mine.AdminToken, []byte("<p>x</p>"), "Content-Type", "text/html")
	require.Equal(t, 404, r.Status)
	for _, path := range []string{"/api/admin/agents/not-a-uuid", "/api/admin/integrations/1", "/api/admin/users/x", "/api/admin/tokens/x"} {
		require.Equal(t, 404, a.call(t, "GET", path, mine.AdminToken, nil).Status, path)
	}

	// Nothing of theirs moved, and lists show only mine.
	var agent models.Agent
	require.NoError(t, a.Store.DB.Where("id = ?", theirs.Tenant.Agent.ID).Take(&agent).Error)
	require.Equal(t, theirs.Tenant.Agent.Name, agent.Name)
	_, err := auth.Verify(context.Background(), a.Store.DB, theirs.Tenant.HostToken, models.ScopeHost)
	require.NoError(t, err, "their token still works")
	for _, key := range []string{"agents", "integrations", "users", "tokens", "configured_tools", "bundles", "workspaces"} {
		path := "/api/admin/" + strings.ReplaceAll(key, "_", "-")
		for _, it := range admList(t, a.call(t, "GET", path, mine.AdminToken, nil), key) {
			raw, _ := json.Marshal(it)
			require.NotContains(t, string(raw), theirs.Tenant.Workspace.ID, path)
			require.NotEqual(t, theirs.Tenant.Agent.ID, it["id"], path)
			require.NotEqual(t, theirs.Tool.ID, it["id"], path)
		}
	}
}

func TestAdminAgentLifecycle(t *testing.T) {
	t.Parallel()
	a := newTestAPI(t)
	tn := testkit.NewTenant(t, a.Store.DB)
	box, err := crypt.New(testkit.TestKey)
	require.NoError(t, err)

	r := a.call(t, "POST", "/api/admin/agents", tn.AdminToken, map[string]any{
		"name": "Invoices", "summary_instructions": "One sentence.", "priority_field": "total_amount",
		"key_definitions":              []map[string]string{{"key": "vendor", "description": "Vendor"}, {"key": "total_amount", "type": "number"}},
		"document_translation_enabled": true, "resume_webhook_url": "https://agent.example.com/hook",
	})
	require.Equal(t, 201, r.Status, "%s", r.Raw)
	id := admID(t, r)
	secret, _ := r.Body["webhook_secret"].(string)
	require.True(t, strings.HasPrefix(secret, "whsec_"), "the create reply shows the secret once: %s", r.Raw)
	require.Equal(t, true, r.Body["webhook_secret_set"])
	require.Equal(t, "https://agent.example.com/hook", r.Body["resume_webhook_url"])
	require.Len(t, r.Body["key_definitions"], 2)

	var row models.Agent
	require.NoError(t, a.Store.DB.Where("id = ?", id).Take(&row).Error)
	require.NotContains(t, string(row.WebhookSecretEnc), secret, "sealed at rest")
	keys := openKeyring(t, box, row.WebhookSecretEnc)
	require.Equal(t, secret, keys.Current.String())

	r = a.call(t, "GET", "/api/admin/agents/"+id, tn.AdminToken, nil)
	require.Equal(t, 200, r.Status)
	require.NotContains(t, string(r.Raw), secret, "never shown again")
	require.NotContains(t, r.Body, "webhook_secret")
	require.Equal(t, true, r.Body["document_translation_enabled"])

	r = a.call(t, "PATCH", "/api/admin/agents/"+id, tn.AdminToken, map[string]any{"name": "Invoices v2", "resume_webhook_url": nil})
	require.Equal(t, 200, r.Status, "%s", r.Raw)
	require.Equal(t, "Invoices v2", r.Body["name"])
	require.Equal(t, "", r.Body["resume_webhook_url"], "null clears")
	require.Equal(t, "One sentence.", r.Body["summary_instructions"], "fields the patch does not name stay")

	r = a.call(t, "POST", "/api/admin/agents/"+id+"/webhook-secret/rotate", tn.AdminToken, nil)
	require.Equal(t, 200, r.Status, "%s", r.Raw)
	rotated, _ := r.Body["webhook_secret"].(string)
	require.True(t, strings.HasPrefix(rotated, "whsec_"))
	require.NotEqual(t, secret, rotated)
	require.NoError(t, a.Store.DB.Where("id = ?", id).Take(&row).Error)
	keys = openKeyring(t, box, row.WebhookSecretEnc)
	require.Equal(t, rotated, keys.Current.String())
	require.Equal(t, secret, keys.Previous.String(), "the replaced secret signs beside the new one for a day")
	require.WithinDuration(t, time.Now().Add(webhook.DefaultRotationOverlap), keys.PreviousExpiresAt, time.Minute)

	r = a.call(t, "POST", "/api/admin/agents/"+id+"/webhook-secret/rotate", tn.AdminToken, map[string]any{"overlap_seconds": 0})
	require.Equal(t, 200, r.Status, "%s", r.Raw)
	require.NoError(t, a.Store.DB.Where("id = ?", id).Take(&row).Error)
	keys = openKeyring(t, box, row.WebhookSecretEnc)
	require.Equal(t, r.Body["webhook_secret"], keys.Current.String())
	require.True(t, keys.Previous.IsZero(), "overlap 0 retires the replaced secret at once (a leaked one)")
	r = a.call(t, "POST", "/api/admin/agents/"+id+"/webhook-secret/rotate", tn.AdminToken, map[string]any{"overlap_seconds": 8 * 24 * 3600})
	require.Equal(t, 400, r.Status, "%s", r.Raw)

	names := []string{}
	for _, it := range admList(t, a.call(t, "GET", "/api/admin/agents", tn.AdminToken, nil), "agents") {
		require.NotContains(t, it, "webhook_secret")
		names = append(names, it["name"].(string))
	}
	require.ElementsMatch(t, []string{tn.Agent.Name, "Invoices v2"}, names)

	for _, tc := range []struct {
		body map[string]any
		msg  string
	}{
		{map[string]any{"name": ""}, "name is required"},
		{map[string]any{"resume_webhook_url": "ftp://agent.example.com"}, "resume_webhook_url must be an absolute http or https URL"},
		{map[string]any{"resume_webhook_url": "/relative"}, "resume_webhook_url must be an absolute http or https URL"},
		{map[string]any{"resume_webhook_url": "https://user:pw@agent.example.com/"}, "resume_webhook_url may not carry credentials"},
		{map[string]any{"key_definitions": []map[string]string{{"key": "a"}, {"key": "a"}}}, `key_definitions[1].key "a" is defined twice`},
		{map[string]any{"key_definitions": []map[string]string{{"key": "has space"}}}, `key_definitions[0].key "has space" must start with a letter`},
		{map[string]any{"key_definitions": []map[string]string{{"key": "a", "type": "money"}}}, `key_definitions[0].type "money" must be one of`},
		{map[string]any{"key_definitions": []map[string]string{{"key": "a", "colour": "red"}}}, `unknown field "colour"`},
		{map[string]any{"priority_field": "total amount"}, `priority_field "total amount" must start with a letter`},
		{map[string]any{"webhook_secret": "mine"}, `unknown field "webhook_secret"`},
		{map[string]any{"document_translation_enabled": "yes"}, "document_translation_enabled must be true or false"},
	} {
		body := map[string]any{"name": "x"}
		for k, v := range tc.body {
			body[k] = v
		}
		r := a.call(t, "POST", "/api/admin/agents", tn.AdminToken, body)
		require.Equal(t, 400, r.Status, "%v: %s", tc.body, r.Raw)
		require.Contains(t, r.Body["error"], tc.msg)
		r = a.call(t, "PATCH", "/api/admin/agents/"+id, tn.AdminToken, tc.body)
		require.Equal(t, 400, r.Status, "patch %v: %s", tc.body, r.Raw)
	}

	r = a.call(t, "DELETE", "/api/admin/agents/"+id, tn.AdminToken, nil)
	require.Equal(t, 204, r.Status, "%s", r.Raw)
	require.Equal(t, 404, a.call(t, "GET", "/api/admin/agents/"+id, tn.AdminToken, nil).Status)
	require.Equal(t, []string{"agent.create", "agent.update", "agent.rotate_webhook_secret", "agent.rotate_webhook_secret", "agent.delete"}, admAudit(t, a, id))
}

func TestAdminIntegrationSecretsAreWriteOnly(t *testing.T) {
	t.Parallel()
	a := newTestAPI(t)
	tn := testkit.NewTenant(t, a.Store.DB)
	box, err := crypt.New(testkit.TestKey)
	require.NoError(t, err)
	const dsn = "postgres://reader:s3cret-pw@db.internal:5432/invoices"
	const clientSecret = "oauth-client-secret-value"

	r := a.call(t, "POST", "/api/admin/integrations", tn.AdminToken, map[string]any{
		"name": "invoices-db", "kind": "postgres", "config": map[string]any{"schema": "public"},
		"secrets": map[string]any{"dsn": dsn},
	})
	require.Equal(t, 201, r.Status, "%s", r.Raw)
	pgID := admID(t, r)
	require.Equal(t, []any{"dsn"}, r.Body["secrets_set"])
	require.Equal(t, map[string]any{"schema": "public"}, r.Body["config"])
	require.NotContains(t, string(r.Raw), "s3cret")

	r = a.call(t, "POST", "/api/admin/integrations", tn.AdminToken, map[string]any{
		"name": "crm", "kind": "rest", "base_url": "https://crm.example.com/api",
		"secrets": map[string]any{"oauth_config": map[string]string{"client_id": "cid", "client_secret": clientSecret}, "bearer": "tok-1"},
	})
	require.Equal(t, 201, r.Status, "%s", r.Raw)
	restID := admID(t, r)
	require.Equal(t, []any{"bearer", "oauth_config"}, r.Body["secrets_set"])

	// An update merges secrets key by key and never echoes them.
	r = a.call(t, "PATCH", "/api/admin/integrations/"+restID, tn.AdminToken, map[string]any{
		"name": "crm-eu", "secrets": map[string]any{"bearer": nil, "api_key": "k-2"},
	})
	require.Equal(t, 200, r.Status, "%s", r.Raw)
	require.Equal(t, "crm-eu", r.Body["name"])
	require.Equal(t, "https://crm.example.com/api", r.Body["base_url"])
	require.Equal(t, []any{"api_key", "oauth_config"}, r.Body["secrets_set"])
	var row models.Integration
	require.NoError(t, a.Store.DB.Where("id = ?", restID).Take(&row).Error)
	var stored map[string]any
	require.NoError(t, box.OpenJSON(row.SecretsEnc, &stored))
	require.Equal(t, map[string]any{"api_key": "k-2", "oauth_config": map[string]any{"client_id": "cid", "client_secret": clientSecret}}, stored)
	require.NotContains(t, string(row.SecretsEnc), clientSecret, "sealed at rest")

	for _, path := range []string{"/api/admin/integrations", "/api/admin/integrations/" + pgID, "/api/admin/integrations/" + restID} {
		r := a.call(t, "GET", path, tn.AdminToken, nil)
		require.Equal(t, 200, r.Status)
		for _, secret := range []string{"s3cret", clientSecret, "k-2", "tok-1"} {
			require.NotContains(t, string(r.Raw), secret, path)
		}
	}
	var details []string
	require.NoError(t, a.Store.DB.Model(&models.AuditEntry{}).Where("target_type = ?", "integration").Pluck("detail", &details).Error)
	require.Len(t, details, 3)
	for _, d := range details {
		require.NotContains(t, d, clientSecret, "the audit log holds no secret")
		require.NotContains(t, d, "s3cret")
	}

	for _, tc := range []struct {
		body map[string]any
		msg  string
	}{
		{map[string]any{"name": "x", "kind": "oracle"}, `kind "oracle" must be one of postgres, rest, mssql, sqlite`},
		{map[string]any{"name": "x"}, "kind is required"},
		{map[string]any{"name": "x", "kind": "sqlite", "secrets": map[string]any{"dsn": "/etc/passwd"}}, "kind sqlite is for the embedded dev mode only"},
		{map[string]any{"name": "x", "kind": "postgres"}, "secrets.dsn (a string) is required for a postgres integration"},
		{map[string]any{"name": "x", "kind": "mssql", "secrets": map[string]any{"dsn": 5}}, "secrets.dsn (a string) is required for a mssql integration"},
		{map[string]any{"name": "x", "kind": "postgres", "secrets": map[string]any{"dsn": "postgres://postgres@/appruntime?host=/var/run/postgresql"}},
			"secrets.dsn: the DSN must name a host (unix sockets are not allowed)"},
		{map[string]any{"name": "x", "kind": "postgres", "secrets": map[string]any{"dsn": "postgres://u:hunter2@db.example.com/x?passfile=/etc/shadow"}},
			`secrets.dsn: DSN parameter "passfile" is not allowed for a data source`},
		{map[string]any{"name": "x", "kind": "rest"}, "base_url is required"},
		{map[string]any{"name": "x", "kind": "rest", "base_url": "file:///etc"}, "base_url must be an absolute http or https URL"},
		{map[string]any{"name": "x", "kind": "rest", "base_url": "https://a.example", "config": []int{1}}, "config must be a JSON object"},
		{map[string]any{"name": "", "kind": "rest", "base_url": "https://a.example"}, "name is required"},
	} {
		r := a.call(t, "POST", "/api/admin/integrations", tn.AdminToken, tc.body)
		require.Equal(t, 400, r.Status, "%v: %s", tc.body, r.Raw)
		require.Contains(t, r.Body["error"], tc.msg)
	}
	r = a.call(t, "PATCH", "/api/admin/integrations/"+pgID, tn.AdminToken, map[string]any{"secrets": map[string]any{"dsn": nil}})
	require.Equal(t, 400, r.Status, "a postgres integration keeps its dsn: %s", r.Raw)
	r = a.call(t, "PATCH", "/api/admin/integrations/"+pgID, tn.AdminToken, map[string]any{"kind": "rest"})
	require.Equal(t, 400, r.Status)
	require.Contains(t, r.Body["error"], "kind cannot change")

	// An integration a binding uses cannot be deleted; an unused one can.
	b := models.Binding{ID: models.NewID(), WorkspaceID: tn.Workspace.ID, Name: "b", BindingKind: "postgres", IntegrationID: &pgID,
		AllowedOperations: models.JSON(`{}`), Version: 1}
	require.NoError(t, a.Store.DB.Create(&b).Error)
	r = a.call(t, "DELETE", "/api/admin/integrations/"+pgID, tn.AdminToken, nil)
	require.Equal(t, 409, r.Status, "%s", r.Raw)
	require.Contains(t, r.Body["error"], "integration is still used by bindings or configured tools")
	require.Equal(t, 204, a.call(t, "DELETE", "/api/admin/integrations/"+restID, tn.AdminToken, nil).Status)
	require.Equal(t, []string{"integration.create", "integration.update", "integration.delete"}, admAudit(t, a, restID))
}

func TestAdminUsers(t *testing.T) {
	t.Parallel()
	a := newTestAPI(t)
	tn := testkit.NewTenant(t, a.Store.DB)
	ctx := context.Background()

	r := a.call(t, "POST", "/api/admin/users", tn.AdminToken, map[string]any{
		"email": "Rita@Example.COM", "name": "Rita", "role": "reviewer", "password": "long enough pw"})
	require.Equal(t, 201, r.Status, "%s", r.Raw)
	id := admID(t, r)
	require.Equal(t, "rita@example.com", r.Body["email"])
	require.NotContains(t, string(r.Raw), "password")
	u, err := auth.CheckPassword(ctx, a.Store.DB, "rita@example.com", "long enough pw")
	require.NoError(t, err, "stored as bcrypt")
	require.Equal(t, id, u.ID)
	require.True(t, strings.HasPrefix(u.PasswordHash, "$2"))

	r = a.call(t, "POST", "/api/admin/users", tn.AdminToken, map[string]any{
		"email": "rita@example.com", "role": "admin", "password": "another long pw"})
	require.Equal(t, 409, r.Status, "%s", r.Raw)
	require.Equal(t, "a user with email rita@example.com already exists in this workspace", r.Body["error"])

	r = a.call(t, "PATCH", "/api/admin/users/"+id, tn.AdminToken, map[string]any{"role": "admin", "password": "a new password"})
	require.Equal(t, 200, r.Status, "%s", r.Raw)
	require.Equal(t, "admin", r.Body["role"])
	require.Equal(t, "Rita", r.Body["name"])
	_, err = auth.CheckPassword(ctx, a.Store.DB, "rita@example.com", "a new password")
	require.NoError(t, err)
	_, err = auth.CheckPassword(ctx, a.Store.DB, "rita@example.com", "long enough pw")
	require.Error(t, err, "the old password no longer works")

	for _, tc := range []struct {
		body map[string]any
		msg  string
	}{
		{map[string]any{"email": "x@example.com", "role": "owner", "password": "long enough pw"}, "role must be admin or reviewer"},
		{map[string]any{"email": "not-an-email", "role": "admin", "password": "long enough pw"}, `email "not-an-email" is not an email address`},
		{map[string]any{"email": "x@example.com", "role": "admin"}, "password is required"},
		{map[string]any{"email": "x@example.com", "role": "admin", "password": "short"}, "password must be at least 8 characters"},
		{map[string]any{"email": "x@example.com", "role": "admin", "password": strings.Repeat("p", 73)}, "password must be at most 72 bytes"},
		{map[string]any{"email": "x@example.com", "role": "admin", "password": "long enough pw", "password_hash": "x"}, `unknown field "password_hash"`},
	} {
		r := a.call(t, "POST", "/api/admin/users", tn.AdminToken, tc.body)
		require.Equal(t, 400, r.Status, "%v: %s", tc.body, r.Raw)
		require.Contains(t, r.Body["error"], tc.msg)
	}

	users := admList(t, a.call(t, "GET", "/api/admin/users", tn.AdminToken, nil), "users")
	require.Len(t, users, 2)
	for _, it := range users {
		require.NotContains(t, it, "password_hash")
	}
	require.Equal(t, 204, a.call(t, "DELETE", "/api/admin/users/"+id, tn.AdminToken, nil).Status)
	require.Equal(t, 404, a.call(t, "GET", "/api/admin/users/"+id, tn.AdminToken, nil).Status)
	require.Equal(t, []string{"user.create", "user.update", "user.delete"}, admAudit(t, a, id))
}

func TestAdminTokens(t *testing.T) {
	t.Parallel()
	a := newTestAPI(t)
	tn := testkit.NewTenant(t, a.Store.DB)
	other := testkit.NewTenant(t, a.Store.DB)
	ctx := context.Background()

	issued := map[string]string{}
	for scope, body := range map[string]map[string]any{
		models.ScopeHost:  {"scope": "host", "name": "reviewer web", "user_id": tn.Admin.ID},
		models.ScopeAgent: {"scope": "agent", "name": "platform", "agent_id": tn.Agent.ID},
		models.ScopeAdmin: {"scope": "admin", "name": "ci"},
	} {
		r := a.call(t, "POST", "/api/admin/tokens", tn.AdminToken, body)
		require.Equal(t, 201, r.Status, "%s", r.Raw)
		secret, _ := r.Body["token"].(string)
		require.True(t, strings.HasPrefix(secret, "art_"+scope+"_"), "%s", r.Raw)
		p, err := auth.Verify(ctx, a.Store.DB, secret, scope)
		require.NoError(t, err, "the issued %s token works", scope)
		require.Equal(t, tn.Workspace.ID, p.WorkspaceID)
		issued[admID(t, r)] = secret
	}

	list := admList(t, a.call(t, "GET", "/api/admin/tokens", tn.AdminToken, nil), "tokens")
	require.Len(t, list, 6, "three of the tenant, three issued")
	raw, _ := json.Marshal(list)
	for _, secret := range issued {
		require.NotContains(t, string(raw), secret, "lists never carry a secret")
	}
	for _, it := range list {
		require.NotContains(t, it, "token")
		require.NotContains(t, it, "token_hash")
	}

	for id, secret := range issued {
		r := a.call(t, "GET", "/api/admin/tokens/"+id, tn.AdminToken, nil)
		require.Equal(t, 200, r.Status)
		require.NotContains(t, string(r.Raw), secret)
		require.Equal(t, 204, a.call(t, "DELETE", "/api/admin/tokens/"+id, tn.AdminToken, nil).Status)
		_, err := auth.Verify(ctx, a.Store.DB, secret, strings.Split(secret, "_")[1])
		require.Error(t, err, "a revoked token stops working")
		require.Equal(t, 404, a.call(t, "DELETE", "/api/admin/tokens/"+id, tn.AdminToken, nil).Status, "revoking twice")
		require.Equal(t, []string{"token.issue", "token.revoke"}, admAudit(t, a, id))
	}

	for _, tc := range []struct {
		body map[string]any
		msg  string
	}{
		{map[string]any{"scope": "root"}, `scope "root" must be host, agent or admin`},
		{map[string]any{}, "scope is required"},
		{map[string]any{"scope": "host"}, "user_id is required for a host token"},
		{map[string]any{"scope": "host", "user_id": other.Admin.ID}, "is not a user of this workspace"},
		{map[string]any{"scope": "host", "user_id": tn.Admin.ID, "agent_id": tn.Agent.ID}, "agent_id is only for agent tokens"},
		{map[string]any{"scope": "agent"}, "agent_id is required for an agent token"},
		{map[string]any{"scope": "agent", "agent_id": other.Agent.ID}, "is not an agent of this workspace"},
		{map[string]any{"scope": "agent", "agent_id": "not-a-uuid"}, "is not an agent of this workspace"},
		{map[string]any{"scope": "admin", "user_id": tn.Admin.ID}, "an admin token takes neither user_id nor agent_id"},
	} {
		r := a.call(t, "POST", "/api/admin/tokens", tn.AdminToken, tc.body)
		require.Equal(t, 400, r.Status, "%v: %s", tc.body, r.Raw)
		require.Contains(t, r.Body["error"], tc.msg)
	}
}

func TestAdminWorkspaces(t *testing.T) {
	t.Parallel()
	a := newTestAPI(t)
	tn := testkit.NewTenant(t, a.Store.DB)

	list := admList(t, a.call(t, "GET", "/api/admin/workspaces", tn.AdminToken, nil), "workspaces")
	require.Len(t, list, 1)
	require.Equal(t, tn.Workspace.ID, list[0]["id"])

	r := a.call(t, "PATCH", "/api/admin/workspaces/"+tn.Workspace.ID, tn.AdminToken, map[string]any{"name": "Renamed"})
	require.Equal(t, 200, r.Status, "%s", r.Raw)
	require.Equal(t, "Renamed", r.Body["name"])
	r = a.call(t, "PATCH", "/api/admin/workspaces/"+tn.Workspace.ID, tn.AdminToken, map[string]any{"id": models.NewID()})
	require.Equal(t, 400, r.Status)
	require.Contains(t, r.Body["error"], `unknown field "id"`)

	// A workspace admin is no operator: creating a workspace is 403, and
	// nothing is made.
	r = a.call(t, "POST", "/api/admin/workspaces", tn.AdminToken, map[string]any{"name": "Second"})
	require.Equal(t, 403, r.Status, "%s", r.Raw)
	require.Equal(t, "workspaces are created by an operator: appruntime workspace create NAME", r.Body["error"])
	var named int64
	require.NoError(t, a.Store.DB.Model(&models.Workspace{}).Where("name = ?", "Second").Count(&named).Error)
	require.Zero(t, named)

	// The operator's workspace (appruntime workspace create) is its own admin's only.
	nw, err := a.P.Admin.CreateWorkspace(context.Background(), "operator", admin.WorkspaceInput{Name: "Second"})
	require.NoError(t, err)
	newID, newToken := nw.ID, nw.AdminToken
	require.True(t, strings.HasPrefix(newToken, "art_admin_"))
	require.Equal(t, 404, a.call(t, "GET", "/api/admin/workspaces/"+newID, tn.AdminToken, nil).Status, "another admin's token stays in its own workspace")
	list = admList(t, a.call(t, "GET", "/api/admin/workspaces", newToken, nil), "workspaces")
	require.Len(t, list, 1)
	require.Equal(t, "Second", list[0]["name"])

	require.Equal(t, 404, a.call(t, "DELETE", "/api/admin/workspaces/"+newID, tn.AdminToken, nil).Status)
	require.Equal(t, 204, a.call(t, "DELETE", "/api/admin/workspaces/"+newID, newToken, nil).Status)
	require.Equal(t, 401, a.call(t, "GET", "/api/admin/workspaces", newToken, nil).Status, "its tokens went with it")
	require.Equal(t, []string{"workspace.delete"}, admAudit(t, a, newID), "the delete outlives the workspace")
	require.Equal(t, []string{"workspace.update"}, admAudit(t, a, tn.Workspace.ID))
}

func TestAdminDeleteWorkspaceWithEverythingInIt(t *testing.T) {
	t.Parallel()
	a := newTestAPI(t)
	f := newAppToolFixture(t, a.Store.DB)
	r := a.call(t, "DELETE", "/api/admin/workspaces/"+f.Tenant.Workspace.ID, f.Tenant.AdminToken, nil)
	require.Equal(t, 204, r.Status, "%s", r.Raw)
	for _, m := range []any{&models.Workspace{}, &models.Binding{}, &models.Integration{}, &models.ConfiguredTool{}, &models.Task{}} {
		var n int64
		require.NoError(t, a.Store.DB.Model(m).Count(&n).Error)
		require.Zero(t, n, "%T", m)
	}
}

// TestTokensShowWhenTheyWereLastUsed: a request a token authenticates
// stamps its last_used_at, which the admin API shows; an unused token has none.
func TestTokensShowWhenTheyWereLastUsed(t *testing.T) {
	t.Parallel()
	a := newTestAPI(t)
	tn := testkit.NewTenant(t, a.Store.DB)
	before := time.Now().UTC().Add(-time.Second)
	r := a.call(t, "GET", "/api/agent/tasks/"+models.NewID(), tn.AgentToken, nil)
	require.Equal(t, 404, r.Status, "an authenticated call: %s", r.Raw)

	lastUsed := map[string]any{}
	for _, it := range admList(t, a.call(t, "GET", "/api/admin/tokens", tn.AdminToken, nil), "tokens") {
		lastUsed[it["scope"].(string)] = it["last_used_at"]
	}
	require.Nil(t, lastUsed[models.ScopeHost], "never used")
	for _, scope := range []string{models.ScopeAgent, models.ScopeAdmin} {
		stamp, ok := lastUsed[scope].(string)
		require.True(t, ok, "%s token: %v", scope, lastUsed[scope])
		at, err := time.Parse(time.RFC3339Nano, stamp)
		require.NoError(t, err)
		require.True(t, at.After(before), "%s token stamped by this test's call: %s", scope, at)
	}
}

// TestCreatingAUserNeverTellsWhetherAnotherWorkspaceHasTheEmail: emails are
// unique per workspace, so an admin who creates a user with an email of
// another workspace's user gets the same 201 as with any fresh email.
func TestCreatingAUserNeverTellsWhetherAnotherWorkspaceHasTheEmail(t *testing.T) {
	t.Parallel()
	a := newTestAPI(t)
	mine := testkit.NewTenant(t, a.Store.DB)
	theirs := testkit.NewTenant(t, a.Store.DB)
	for _, email := range []string{theirs.Admin.Email, "fresh-" + models.NewID()[:8] + "@example.test"} {
		r := a.call(t, "POST", "/api/admin/users", mine.AdminToken, map[string]any{
			"email": email, "role": "reviewer", "password": "long enough pw"})
		require.Equal(t, 201, r.Status, "%s: %s", email, r.Raw)
		require.NotContains(t, string(r.Raw), theirs.Workspace.ID)
	}
	r := a.call(t, "POST", "/api/admin/users", mine.AdminToken, map[string]any{
		"email": theirs.Admin.Email, "role": "reviewer", "password": "long enough pw"})
	require.Equal(t, 409, r.Status, "only a user of the caller's own workspace conflicts: %s", r.Raw)
	_, err := auth.CheckPassword(context.Background(), a.Store.DB, theirs.Admin.Email, "correct horse battery")
	require.NoError(t, err, "the other workspace's admin still signs in with their own password")
}

// openKeyring opens an agent's sealed webhook keyring.
func openKeyring(t *testing.T, box *crypt.Box, sealed []byte) webhook.Keyring {
	t.Helper()
	opened, err := box.Open(sealed)
	require.NoError(t, err)
	keys, err := webhook.ParseStoredKeyring(opened)
	require.NoError(t, err)
	return keys
}

// TestChangingThePriorityFieldReordersParkedTasks: an agent's new
// priority_field gives its parked tasks the priority of that key detail at
// once, so the review queue hands them out in the new order.
func TestChangingThePriorityFieldReordersParkedTasks(t *testing.T) {
	t.Parallel()
	a := newTestAPI(t)
	tn := testkit.NewTenant(t, a.Store.DB)
	now := time.Now().UTC()
	park := func(amount, urgency string) string {
		tk := models.Task{ID: models.NewID(), WorkspaceID: tn.Workspace.ID, AgentID: tn.Agent.ID, Status: models.TaskWaitingForInput,
			CreatedAt: now, UpdatedAt: now}
		require.NoError(t, a.Store.DB.Create(&tk).Error)
		for k, v := range map[string]string{"amount": amount, "urgency": urgency} {
			require.NoError(t, a.Store.DB.Create(&models.AgentKeyValue{ID: models.NewID(), TaskID: tk.ID, AgentID: tn.Agent.ID,
				Key: k, Value: models.JSON(v), CreatedAt: now, UpdatedAt: now}).Error)
		}
		return tk.ID
	}
	big, urgent := park(`900`, `1`), park(`"12.50"`, `3`)
	priorities := func() (float64, float64) {
		var b, u models.Task
		require.NoError(t, a.Store.DB.Where("id = ?", big).Take(&b).Error)
		require.NoError(t, a.Store.DB.Where("id = ?", urgent).Take(&u).Error)
		return b.Priority, u.Priority
	}
	for _, tc := range []struct {
		field     string
		big, urgt float64
	}{{"amount", 900, 12.5}, {"urgency", 1, 3}} {
		r := a.call(t, "PATCH", "/api/admin/agents/"+tn.Agent.ID, tn.AdminToken, map[string]any{"priority_field": tc.field})
		require.Equal(t, 200, r.Status, "%s", r.Raw)
		b, u := priorities()
		require.Equal(t, tc.big, b, tc.field)
		require.Equal(t, tc.urgt, u, tc.field)
	}
}

// TestAdminAgentWebhookEvents checks an agent's webhook subscription
// (docs/agent-platforms.md#webhook-event-catalogue): every type by default
// (null), narrowed by PATCH, emptied by [], restored by null; an unknown or
// repeated type is a 400 naming it and changes nothing.
func TestAdminAgentWebhookEvents(t *testing.T) {
	t.Parallel()
	a := newTestAPI(t)
	tn := testkit.NewTenant(t, a.Store.DB)
	path := "/api/admin/agents/" + tn.Agent.ID
	stored := func() string {
		var row models.Agent
		require.NoError(t, a.Store.DB.Where("id = ?", tn.Agent.ID).Take(&row).Error)
		return string(row.WebhookEvents)
	}

	r := a.call(t, "GET", path, tn.AdminToken, nil)
	require.Equal(t, 200, r.Status, "%s", r.Raw)
	require.Nil(t, r.Body["webhook_events"], "every type by default")

	r = a.call(t, "PATCH", path, tn.AdminToken, map[string]any{"webhook_events": []string{"task.resumed", "message.sent"}})
	require.Equal(t, 200, r.Status, "%s", r.Raw)
	require.Equal(t, []any{"task.resumed", "message.sent"}, r.Body["webhook_events"])
	require.JSONEq(t, `["task.resumed","message.sent"]`, stored())

	r = a.call(t, "PATCH", path, tn.AdminToken, map[string]any{"name": "renamed"})
	require.Equal(t, 200, r.Status, "%s", r.Raw)
	require.Equal(t, []any{"task.resumed", "message.sent"}, r.Body["webhook_events"], "a patch that does not name it keeps it")

	for _, tc := range []struct {
		events any
		msg    string
	}{
		{[]string{"task.resumed", "task.created"}, `unknown event type "task.created"`},
		{[]string{"reply.stored", "reply.stored"}, `"reply.stored" is named twice`},
		{"task.resumed", "webhook_events"},
	} {
		r = a.call(t, "PATCH", path, tn.AdminToken, map[string]any{"webhook_events": tc.events})
		require.Equal(t, 400, r.Status, "%v: %s", tc.events, r.Raw)
		require.Contains(t, r.Body["error"], tc.msg)
		require.JSONEq(t, `["task.resumed","message.sent"]`, stored(), "a refused patch changes nothing")
	}

	r = a.call(t, "PATCH", path, tn.AdminToken, map[string]any{"webhook_events": []string{}})
	require.Equal(t, 200, r.Status, "%s", r.Raw)
	require.Equal(t, []any{}, r.Body["webhook_events"], "none")
	r = a.call(t, "PATCH", path, tn.AdminToken, map[string]any{"webhook_events": nil})
	require.Equal(t, 200, r.Status, "%s", r.Raw)
	require.Nil(t, r.Body["webhook_events"], "null restores every type")
	require.Empty(t, stored())
}
