package console_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"

	"github.com/appruntime/appruntime/internal/admin"
	"github.com/appruntime/appruntime/internal/testkit"
	"github.com/appruntime/appruntime/internal/testkit/browser"
	"github.com/appruntime/appruntime/models"
)

// pageHTML is the whole document of the page the browser shows.
func pageHTML(t *testing.T, ctx context.Context) string {
	t.Helper()
	return browser.Eval[string](t, ctx, `document.documentElement.outerHTML`)
}

// TestIntegrationFormsInTheBrowser walks the integration forms in Chromium:
// every kind the form offers shows its own secret fields (sqlite, refused
// outside the dev mode, is not offered); a postgres integration is refused
// a DSN of the wrong scheme (the name kept, the DSN field named, the secret
// not typed back), created with a DSN whose server does not listen, tested
// ("could not connect", in our words), its DSN replaced and tested again
// (passes), edited with an error and deleted. A REST integration is created
// with a bearer token and tested against a loopback upstream. No secret is
// ever on a page.
func TestIntegrationFormsInTheBrowser(t *testing.T) {
	t.Parallel()
	ctx := browser.New(t)
	s := newStack(t)
	db := s.Store.DB
	ws := s.Tenant.Workspace.ID
	upstream := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusNoContent) }))
	t.Cleanup(upstream.Close)
	source := testkit.URLOf(testkit.DataSource(t))
	var pages []string
	keep := func() { pages = append(pages, pageHTML(t, ctx)) }

	signInAt(t, ctx, s, "/integrations/new", `form.integration-form input[name="name"]`)
	kinds := browser.Eval[[]string](t, ctx, `[...document.querySelectorAll('a[href^="/integrations/new?kind="]')].map(a => a.textContent.trim())`)
	require.Equal(t, admin.IntegrationKinds, kinds)
	secretFields := map[string][]string{
		admin.KindPostgres:  {"secret_dsn"},
		admin.KindREST:      {"secret_bearer_token", "oauth_client_id", "oauth_client_secret", "oauth_username", "oauth_password", "oauth_scope", "oauth_auth_style"},
		admin.KindMSSQL:     {"secret_dsn"},
		admin.KindSQLite:    {"secret_dsn"},
		admin.KindComponent: {"secret_env"},
	}
	for _, kind := range kinds {
		require.NoError(t, chromedp.Do(ctx,
			chromedp.Navigate(s.URL+"/integrations/new?kind="+kind),
			chromedp.WaitVisible(chromedp.CSS(`form.integration-form input[name="name"]`)),
			browser.Poll(`document.querySelector('form.integration-form input[name="kind"]').value === '`+kind+`'`, pollWait),
		))
		got := browser.Eval[[]string](t, ctx, `[...document.querySelectorAll('form.integration-form [name^="secret_"], form.integration-form [name^="oauth_"]')].map(e => e.name)`)
		require.Equal(t, secretFields[kind], got, kind)
		for _, f := range got {
			if strings.HasSuffix(f, "dsn") || strings.HasSuffix(f, "token") || strings.HasSuffix(f, "secret") || strings.HasSuffix(f, "password") {
				require.Equal(t, "password", browser.Eval[string](t, ctx, `document.querySelector('[name="`+f+`"]').type`), "%s %s is write-only", kind, f)
			}
		}
	}

	// sqlite outside the dev mode: refused beside the kind, the name kept.
	require.NoError(t, chromedp.Do(ctx,
		chromedp.Navigate(s.URL+"/integrations/new?kind=sqlite"),
		chromedp.WaitReady(chromedp.CSS(`form.integration-form input[name="kind"][value="sqlite"]`)),
		chromedp.SendKeys(chromedp.CSS(`form.integration-form input[name="name"]`), "Local file"),
		chromedp.SendKeys(chromedp.CSS(`input[name="secret_dsn"]`), "/tmp/s3cret.db"),
		chromedp.Click(chromedp.CSS(`form.integration-form button[type="submit"]`)),
		chromedp.WaitVisible(chromedp.CSS(`.field-error[data-field="kind"]`)),
	))
	keep()
	require.Contains(t, text(t, ctx, `.field-error[data-field="kind"]`), "kind sqlite is for the embedded dev mode only")
	require.Equal(t, "Local file", value(t, ctx, `form.integration-form input[name="name"]`))

	// Postgres: a DSN of the wrong scheme is refused beside the DSN.
	require.NoError(t, chromedp.Do(ctx,
		chromedp.Navigate(s.URL+"/integrations/new?kind=postgres"),
		chromedp.WaitReady(chromedp.CSS(`form.integration-form input[name="kind"][value="postgres"]`)),
		chromedp.SendKeys(chromedp.CSS(`form.integration-form input[name="name"]`), "Shop database"),
		chromedp.SendKeys(chromedp.CSS(`input[name="secret_dsn"]`), "mysql://reader:s3cret-pw@127.0.0.1:1/shop"),
		chromedp.Click(chromedp.CSS(`form.integration-form button[type="submit"]`)),
		chromedp.WaitVisible(chromedp.CSS(`.field-error[data-field="secrets.dsn"]`)),
	))
	keep()
	require.Contains(t, text(t, ctx, `.field-error[data-field="secrets.dsn"]`), "secrets.dsn")
	require.Equal(t, "Shop database", value(t, ctx, `form.integration-form input[name="name"]`))
	require.Empty(t, value(t, ctx, `input[name="secret_dsn"]`), "a secret is never typed back")

	// Created with a server that does not listen: the save passes, the test says why it fails.
	require.NoError(t, chromedp.Do(ctx,
		chromedp.SendKeys(chromedp.CSS(`input[name="secret_dsn"]`), "postgres://reader:s3cret-pw@127.0.0.1:1/shop?sslmode=disable"),
		chromedp.Click(chromedp.CSS(`form.integration-form button[type="submit"]`)),
		chromedp.WaitVisible(chromedp.CSS(`button.test-connection`)),
	))
	keep()
	var pg models.Integration
	require.NoError(t, db.Where("workspace_id = ? AND name = ?", ws, "Shop database").Take(&pg).Error)
	require.Contains(t, text(t, ctx, `.notice`), "The integration was saved")
	require.Equal(t, "set", text(t, ctx, `.badge.secret-set`))
	require.Empty(t, value(t, ctx, `input[name="secret_dsn"]`))
	require.NoError(t, chromedp.Do(ctx,
		chromedp.Click(chromedp.CSS(`button.test-connection`)),
		chromedp.WaitVisible(chromedp.CSS(`.test-failed`)),
	))
	keep()
	require.Contains(t, text(t, ctx, `.test-failed`), "could not connect to the DSN's host and port")

	// The DSN replaced: the test passes now, so the new secret is the one stored.
	require.NoError(t, chromedp.Do(ctx,
		chromedp.SendKeys(chromedp.CSS(`input[name="secret_dsn"]`), source),
		chromedp.Click(chromedp.CSS(`form.integration-form button[type="submit"]`)),
		chromedp.WaitVisible(chromedp.CSS(`.notice`)),
		chromedp.Click(chromedp.CSS(`button.test-connection`)),
		chromedp.WaitVisible(chromedp.CSS(`.test-passed`)),
	))
	keep()
	require.NotEmpty(t, text(t, ctx, `.test-passed`))
	require.NotContains(t, pageHTML(t, ctx), source)

	// Edit with an error: the base URL named, the input kept, nothing saved.
	require.NoError(t, chromedp.Do(ctx,
		chromedp.SetValue(chromedp.CSS(`form.integration-form input[name="name"]`), "Shop database (renamed)"),
		chromedp.SetValue(chromedp.CSS(`form.integration-form input[name="base_url"]`), "ftp://shop.example.test"),
		chromedp.Click(chromedp.CSS(`form.integration-form button[type="submit"]`)),
		chromedp.WaitVisible(chromedp.CSS(`.field-error[data-field="base_url"]`)),
	))
	keep()
	require.Equal(t, "Shop database (renamed)", value(t, ctx, `form.integration-form input[name="name"]`))
	require.Equal(t, "ftp://shop.example.test", value(t, ctx, `form.integration-form input[name="base_url"]`))
	require.NoError(t, db.Take(&pg, "id = ?", pg.ID).Error)
	require.Equal(t, "Shop database", pg.Name, "nothing half-written")

	// REST with a bearer token, tested against the upstream.
	require.NoError(t, chromedp.Do(ctx,
		chromedp.Navigate(s.URL+"/integrations/new?kind=rest"),
		chromedp.WaitVisible(chromedp.CSS(`input[name="secret_bearer_token"]`)),
		chromedp.SendKeys(chromedp.CSS(`form.integration-form input[name="name"]`), "Shop API"),
		chromedp.SendKeys(chromedp.CSS(`form.integration-form input[name="base_url"]`), upstream.URL),
		chromedp.SendKeys(chromedp.CSS(`input[name="secret_bearer_token"]`), "s3cret-bearer"),
		chromedp.Click(chromedp.CSS(`form.integration-form button[type="submit"]`)),
		chromedp.WaitVisible(chromedp.CSS(`button.test-connection`)),
	))
	// The create's page shows its notice: open the page without it, so
	// that the notice waited for below is the update's.
	created, err := chromedp.Run(ctx, chromedp.Location())
	require.NoError(t, err)
	created, _, _ = strings.Cut(created, "?")
	require.NoError(t, chromedp.Do(ctx,
		chromedp.Navigate(created),
		chromedp.WaitVisible(chromedp.CSS(`button.test-connection`)),
		chromedp.SendKeys(chromedp.CSS(`input[name="secret_bearer_token"]`), "s3cret-bearer-2"),
		chromedp.Click(chromedp.CSS(`form.integration-form button[type="submit"]`)),
		chromedp.WaitVisible(chromedp.CSS(`.notice`)),
		chromedp.Click(chromedp.CSS(`button.test-connection`)),
		chromedp.WaitVisible(chromedp.CSS(`.test-passed`)),
	))
	keep()
	require.Contains(t, text(t, ctx, `.test-passed`), "answered HTTP 204")
	var rest models.Integration
	require.NoError(t, db.Where("workspace_id = ? AND name = ?", ws, "Shop API").Take(&rest).Error)
	require.EqualValues(t, 1, auditCount(t, s.Store, ws, "integration.update", rest.ID), "the replaced token is audited")

	// Delete the postgres integration from its page.
	require.NoError(t, chromedp.Do(ctx,
		chromedp.Navigate(s.URL+"/integrations/"+pg.ID),
		chromedp.WaitVisible(chromedp.CSS(`form[action$="/delete"] button`)),
		chromedp.Click(chromedp.CSS(`form[action$="/delete"] button`)),
		chromedp.WaitVisible(chromedp.CSS(`a[href="/integrations/new"]`)),
	))
	keep()
	require.Contains(t, text(t, ctx, `.notice`), "deleted")
	require.Error(t, db.Take(&models.Integration{}, "id = ?", pg.ID).Error, "the integration is gone")
	require.EqualValues(t, 1, auditCount(t, s.Store, ws, "integration.delete", pg.ID))

	for n, p := range pages {
		require.NotContains(t, p, "s3cret", "page %d shows a secret", n)
	}
}

// setText sets the value of the form control sel (a textarea, which
// chromedp.SetValue does not take) as typing would, input event included.
func setText(sel, v string) chromedp.Action[chromedp.Void] {
	q, _ := json.Marshal(sel)
	val, _ := json.Marshal(v)
	return chromedp.Evaluate[chromedp.Void](`(() => { const e = document.querySelector(` + string(q) + `); e.value = ` + string(val) + `; e.dispatchEvent(new Event('input', {bubbles: true})); })()`)
}

// pollWait bounds a browser.Poll of these tests.
const pollWait = 15 * time.Second

// writeTemp writes content to a file name in a directory of the test's own
// and returns its path.
func writeTemp(t *testing.T, name, content string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	require.NoError(t, os.WriteFile(p, []byte(content), 0o600))
	return p
}

// TestToolFormsInTheBrowser walks the configured tool forms in Chromium:
// the JSON Schema editor says as the admin types that an input_schema
// breaks the API's rules (a type it does not know; for an app tool, a
// required key the worker injects), the server's refusal stands beside the
// input_schema with the admin's input kept, Format indents the schema, the
// tool is created, edited with a refused config (named, kept, nothing
// saved) then saved, and deleted.
func TestToolFormsInTheBrowser(t *testing.T) {
	t.Parallel()
	ctx := browser.New(t)
	s := newStack(t)
	db := s.Store.DB
	ws := s.Tenant.Workspace.ID
	schemaStatus := `.schema-status[data-field="input_schema"]`

	signInAt(t, ctx, s, "/tools/new?base_tool=python_code_tool", `textarea[name="input_schema"]`)
	require.Contains(t, text(t, ctx, schemaStatus), "meets the rules")
	require.Contains(t, text(t, ctx, `#input-schema-rules`), "$ref only within the schema")
	bad := `{"type": "objekt"}`
	require.NoError(t, chromedp.Do(ctx,
		chromedp.SetValue(chromedp.CSS(`form.tool-form select[name="agent_id"]`), s.Tenant.Agent.ID),
		chromedp.SendKeys(chromedp.CSS(`form.tool-form input[name="display_name"]`), "Totals"),
		setText(`textarea[name="config"]`, `{"code": "print(1)"}`),
		setText(`textarea[name="input_schema"]`, bad),
		browser.WaitText(schemaStatus, `t.includes('type "objekt" must be one of')`),
	))
	require.Equal(t, "true", browser.Eval[string](t, ctx, `document.querySelector('textarea[name="input_schema"]').getAttribute('aria-invalid')`))

	// The server refuses it too, beside the editor, the input kept.
	require.NoError(t, chromedp.Do(ctx,
		chromedp.Click(chromedp.CSS(`form.tool-form button[type="submit"]`)),
		chromedp.WaitVisible(chromedp.CSS(`.field-error[data-field="input_schema"]`)),
	))
	require.Contains(t, text(t, ctx, `.field-error[data-field="input_schema"]`), "input_schema is not a valid JSON Schema")
	require.Equal(t, bad, value(t, ctx, `textarea[name="input_schema"]`))
	require.Equal(t, "Totals", value(t, ctx, `form.tool-form input[name="display_name"]`))
	require.Equal(t, s.Tenant.Agent.ID, value(t, ctx, `form.tool-form select[name="agent_id"]`))
	require.Equal(t, `{"code": "print(1)"}`, value(t, ctx, `textarea[name="config"]`))
	var n int64
	require.NoError(t, db.Model(&models.ConfiguredTool{}).Where("workspace_id = ?", ws).Count(&n).Error)
	require.Zero(t, n)

	// Format indents a valid schema; the tool is created.
	require.NoError(t, chromedp.Do(ctx,
		setText(`textarea[name="input_schema"]`, `{"type":"object","properties":{"n":{"type":"integer"}}}`),
		browser.WaitText(schemaStatus, `t.includes('meets the rules')`),
		chromedp.Click(chromedp.CSS(`button.schema-format`)),
	))
	require.Contains(t, value(t, ctx, `textarea[name="input_schema"]`), "\n  \"properties\": {\n    \"n\": {")
	require.NoError(t, chromedp.Do(ctx,
		chromedp.Click(chromedp.CSS(`form.tool-form button[type="submit"]`)),
		chromedp.WaitVisible(chromedp.CSS(`.notice`)),
	))
	require.Contains(t, text(t, ctx, `.notice`), "The tool was saved")
	var tool models.ConfiguredTool
	require.NoError(t, db.Where("workspace_id = ? AND display_name = ?", ws, "Totals").Take(&tool).Error)
	require.EqualValues(t, 1, auditCount(t, s.Store, ws, "configured_tool.create", tool.ID))

	// Edit with a config the base tool refuses: named, kept, nothing saved.
	require.NoError(t, chromedp.Do(ctx,
		chromedp.Navigate(s.URL+"/tools/"+tool.ID+"/edit"),
		chromedp.WaitVisible(chromedp.CSS(`form.tool-form input[name="display_name"]`)),
		chromedp.SetValue(chromedp.CSS(`form.tool-form input[name="display_name"]`), "Totals v2"),
		setText(`textarea[name="config"]`, `{}`),
		chromedp.Click(chromedp.CSS(`form.tool-form button[type="submit"]`)),
		chromedp.WaitVisible(chromedp.CSS(`.field-error[data-field="config"]`)),
	))
	require.Contains(t, text(t, ctx, `.field-error[data-field="config"]`), "code")
	require.Equal(t, "Totals v2", value(t, ctx, `form.tool-form input[name="display_name"]`))
	require.Equal(t, `{}`, value(t, ctx, `textarea[name="config"]`))
	require.NoError(t, db.Take(&tool, "id = ?", tool.ID).Error)
	require.Equal(t, "Totals", tool.DisplayName, "nothing half-written")
	require.NoError(t, chromedp.Do(ctx,
		setText(`textarea[name="config"]`, `{"code": "print(2)"}`),
		chromedp.Click(chromedp.CSS(`form.tool-form button[type="submit"]`)),
		chromedp.WaitVisible(chromedp.CSS(`.notice`)),
	))
	require.NoError(t, db.Take(&tool, "id = ?", tool.ID).Error)
	require.Equal(t, "Totals v2", tool.DisplayName)

	// An app tool's editor names the injected keys it may not require.
	require.NoError(t, chromedp.Do(ctx,
		chromedp.Navigate(s.URL+"/tools/new?base_tool=app_tool"),
		chromedp.WaitVisible(chromedp.CSS(`textarea[name="input_schema"]`)),
		setText(`textarea[name="input_schema"]`, `{"type": "object", "required": ["configured_tool_id"]}`),
		browser.WaitText(schemaStatus, `t.includes('requires configured_tool_id, which the worker injects')`),
	))

	// Delete from the edit page.
	require.NoError(t, chromedp.Do(ctx,
		chromedp.Navigate(s.URL+"/tools/"+tool.ID+"/edit"),
		chromedp.WaitVisible(chromedp.CSS(`form[action$="/delete"] button`)),
		chromedp.Click(chromedp.CSS(`form[action$="/delete"] button`)),
		chromedp.WaitVisible(chromedp.CSS(`.notice`)),
	))
	require.Contains(t, text(t, ctx, `.notice`), "The tool was deleted")
	require.Error(t, db.Take(&models.ConfiguredTool{}, "id = ?", tool.ID).Error, "the tool is gone")
	require.EqualValues(t, 1, auditCount(t, s.Store, ws, "configured_tool.delete", tool.ID))
}

// TestBundleFormsInTheBrowser uploads bundle versions in Chromium: the
// page shows each version's sha256 and size and the tools that mount the
// bundle; a pasted version with a refused grant keeps the pasted text and
// names the grant list beside it, then is uploaded; a chosen file is
// uploaded with its type read from its extension.
func TestBundleFormsInTheBrowser(t *testing.T) {
	t.Parallel()
	ctx := browser.New(t)
	s := newStack(t)
	f := seedDemo(t, s.P, s.Tenant)
	db := s.Store.DB
	ws := s.Tenant.Workspace.ID

	signInAt(t, ctx, s, "/bundles/"+f.BundleID, `#bundle-versions`)
	var v1 models.Bundle
	require.NoError(t, db.Where("id = ? AND version = 1", f.BundleID).Take(&v1).Error)
	require.Equal(t, v1.SHA256, text(t, ctx, `tr[data-version="1"] .sha256`))
	require.Equal(t, fmt.Sprintf("%d B", v1.Size), text(t, ctx, `tr[data-version="1"] .size`))
	uses := text(t, ctx, `#bundle-uses`)
	require.Contains(t, uses, "Invoice review")
	require.Contains(t, uses, "Invoice review binding")

	// Paste with a refused grant: the text kept, the list named beside it.
	pasted := "<!doctype html><title>v2</title><p>second version</p>"
	require.NoError(t, chromedp.Do(ctx,
		chromedp.SendKeys(chromedp.CSS(`#bundle-upload-paste textarea[name="content"]`), pasted),
		chromedp.Click(chromedp.CSS(`#bundle-upload-paste summary`)),
		chromedp.SendKeys(chromedp.CSS(`#bundle-upload-paste textarea[name="connectDomains"]`), "http://cdn.example.com"),
		chromedp.Click(chromedp.CSS(`#bundle-upload-paste button[type="submit"]`)),
		chromedp.WaitVisible(chromedp.CSS(`#bundle-upload-paste .field-error[data-field="connectDomains"]`)),
	))
	require.Contains(t, text(t, ctx, `#bundle-upload-paste .field-error[data-field="connectDomains"]`), `connectDomains: "http://cdn.example.com" is refused`)
	require.Equal(t, pasted, value(t, ctx, `#bundle-upload-paste textarea[name="content"]`))
	require.Equal(t, "http://cdn.example.com", value(t, ctx, `#bundle-upload-paste textarea[name="connectDomains"]`))
	require.Zero(t, browser.Eval[int](t, ctx, `document.querySelectorAll('#bundle-upload-file .field-error').length`), "the other form is not blamed")
	var n int64
	require.NoError(t, db.Model(&models.Bundle{}).Where("id = ?", f.BundleID).Count(&n).Error)
	require.EqualValues(t, 1, n)

	require.NoError(t, chromedp.Do(ctx,
		setText(`#bundle-upload-paste textarea[name="connectDomains"]`, ""),
		chromedp.Click(chromedp.CSS(`#bundle-upload-paste button[type="submit"]`)),
		chromedp.WaitVisible(chromedp.CSS(`tr[data-version="2"]`)),
	))
	require.Contains(t, text(t, ctx, `.notice`), "New version uploaded")
	sum := sha256.Sum256([]byte(pasted))
	require.Equal(t, hex.EncodeToString(sum[:]), text(t, ctx, `tr[data-version="2"] .sha256`))
	require.Equal(t, fmt.Sprintf("%d B", len(pasted)), text(t, ctx, `tr[data-version="2"] .size`))

	// A chosen file.
	script := "document.body.textContent = 'v3';\n"
	file := writeTemp(t, "v3.js", script)
	require.NoError(t, chromedp.Do(ctx,
		chromedp.SetUploadFiles(chromedp.CSS(`#bundle-upload-file input[type="file"]`), []string{file}),
		chromedp.Click(chromedp.CSS(`#bundle-upload-file button[type="submit"]`)),
		chromedp.WaitVisible(chromedp.CSS(`tr[data-version="3"]`)),
	))
	sum = sha256.Sum256([]byte(script))
	require.Equal(t, hex.EncodeToString(sum[:]), text(t, ctx, `tr[data-version="3"] .sha256`))
	require.Equal(t, fmt.Sprintf("%d B", len(script)), text(t, ctx, `tr[data-version="3"] .size`))
	require.Contains(t, text(t, ctx, `tr[data-version="3"]`), "text/javascript")
	require.EqualValues(t, 2, auditCount(t, s.Store, ws, "bundle.version", f.BundleID), "each upload is audited as the API's")
}
