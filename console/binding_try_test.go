package console_test

import (
	"context"
	"encoding/json"
	"html"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"sync/atomic"
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"

	"github.com/appruntime/appruntime/internal/admin"
	"github.com/appruntime/appruntime/internal/binding"
	"github.com/appruntime/appruntime/internal/bindingspec"
	"github.com/appruntime/appruntime/internal/testkit/browser"
)

// "Try an op" on the demo binding in a real browser: a write runs inside a
// transaction that is rolled back (the page shows its exact SQL and
// arguments, the invoice is unchanged), a read shows its SQL and rows, and
// each try is audited.
func TestTryAnOpInTheBrowser(t *testing.T) {
	t.Parallel()
	ctx := browser.New(t)
	s := newStack(t)
	f := seedDemo(t, s.P, s.Tenant)

	text := func(sel string) string {
		v, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS(sel)))
		require.NoError(t, err, sel)
		return v
	}
	require.NoError(t, chromedp.Do(ctx,
		chromedp.Navigate(s.URL+"/bindings/"+f.BindingID),
		chromedp.WaitVisible(chromedp.CSS(`input[name="email"]`)),
		chromedp.SendKeys(chromedp.CSS(`input[name="email"]`), s.Tenant.Admin.Email),
		chromedp.SendKeys(chromedp.CSS(`input[name="password"]`), testPassword),
		chromedp.Click(chromedp.CSS(`form button[type="submit"]`)),
		chromedp.WaitVisible(chromedp.CSS(`#try-form`)),
	))
	// The form starts from the first op's example and the demo task's
	// session values; choosing another op puts that op's example in place,
	// but never over the admin's own text.
	value := func(sel string) string {
		v, err := chromedp.Run(ctx, chromedp.Value(chromedp.CSS(sel)))
		require.NoError(t, err, sel)
		return v
	}
	require.JSONEq(t, `{"columns": ["id", "vendor", "amount", "status"], "limit": 10}`, value(`#try-payload`))
	require.Equal(t, f.TaskID, value(`#try-form input[name="task_id"]`))
	require.Equal(t, f.StepID, value(`#try-form input[name="step_id"]`))
	require.Equal(t, s.Tenant.Agent.ID, value(`#try-form input[name="agent_id"]`))
	choose := func(op string) {
		require.NoError(t, chromedp.Do(ctx, chromedp.SetValue(chromedp.CSS(`#try-op`), op)))
		_, err := chromedp.Run(ctx, chromedp.Evaluate[bool](`document.getElementById("try-op").dispatchEvent(new Event("change"))`))
		require.NoError(t, err)
	}
	choose("approve_invoice")
	require.JSONEq(t, `{"rows": {"record_decision": {"decision": null, "note": null}}}`, value(`#try-payload`))
	require.NoError(t, chromedp.Do(ctx, chromedp.SetValue(chromedp.CSS(`#try-payload`), `{"rows": {"record_decision": {"decision": "ok"}}}`)))
	choose("set_status")
	require.JSONEq(t, `{"rows": {"record_decision": {"decision": "ok"}}}`, value(`#try-payload`), "the admin's text stays")
	require.NoError(t, chromedp.Do(ctx,
		chromedp.SetValue(chromedp.CSS(`#try-form select[name="op"]`), "set_status"),
		chromedp.SetValue(chromedp.CSS(`#try-form textarea[name="payload"]`), `{"row": {"id": 1, "status": "held"}}`),
		chromedp.Click(chromedp.CSS(`#try-run`)),
		chromedp.WaitVisible(chromedp.CSS(`#try-result`)),
	))
	require.Equal(t, `UPDATE "invoices" SET "status" = $1 WHERE "id" = $2`, text(`#try-result .try-sql`))
	require.Equal(t, `["held","1"]`, text(`#try-result .try-args`))
	require.JSONEq(t, `{"rows_affected":1}`, text(`#try-result .try-reply`))
	require.Contains(t, text(`#try-result h3`), "rolled back")
	var status string
	require.NoError(t, f.Source.DB.Raw(`SELECT status FROM invoices WHERE id = 1`).Scan(&status).Error)
	require.Equal(t, "pending", status, "the tried write was rolled back")

	// The next result is on a new page: drop this one first.
	_, err := chromedp.Run(ctx, chromedp.Evaluate[bool](`document.getElementById("try-result").remove() === undefined`))
	require.NoError(t, err)
	require.NoError(t, chromedp.Do(ctx,
		chromedp.SetValue(chromedp.CSS(`#try-form select[name="op"]`), "list_invoices"),
		chromedp.SetValue(chromedp.CSS(`#try-form textarea[name="payload"]`), `{"filters": {"vendor": "Globex"}, "columns": ["id", "vendor"]}`),
		chromedp.Click(chromedp.CSS(`#try-run`)),
		chromedp.WaitVisible(chromedp.CSS(`#try-result .try-sql`)),
	))
	require.Equal(t, `SELECT "id", "vendor" FROM "invoices" WHERE "vendor" = $1 ORDER BY "id" ASC LIMIT 51`, text(`#try-result .try-sql`))
	require.Equal(t, `["Globex"]`, text(`#try-result .try-args`))
	var reply map[string]any
	require.NoError(t, json.Unmarshal([]byte(text(`#try-result .try-reply`)), &reply))
	require.Equal(t, []any{[]any{float64(3), "Globex"}}, reply["rows"])
	require.EqualValues(t, 2, auditCount(t, s.Store, s.Tenant.Workspace.ID, "binding.try", f.BindingID))
}

// An http_call tried from the console is sent for real and shown with its
// credentials masked; an action's writes are rolled back even when its
// calls succeed; a refusal is shown with the status a bundle would get; and
// the form needs its CSRF token.
func TestTryAnOpShowsRequestsWithCredentialsMasked(t *testing.T) {
	t.Parallel()
	var hits atomic.Int32
	var gotAuth atomic.Value
	upstream := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		gotAuth.Store(r.Header.Get("Authorization"))
		_, _ = io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"exported":true}`))
	}))
	t.Cleanup(upstream.Close)
	c := newTestConsole(t)
	f := seedDemo(t, c.P, c.Tenant)
	ctx := context.Background()
	secret, err := json.Marshal("s3cret-token")
	require.NoError(t, err)
	crm, err := c.P.Admin.CreateIntegration(ctx, c.Tenant.Workspace.ID, "test", admin.IntegrationInput{
		Name: "crm", Kind: admin.KindREST, BaseURL: upstream.URL, Secrets: map[string]json.RawMessage{"bearer_token": secret},
	})
	require.NoError(t, err)
	b, err := c.P.Bindings.Get(ctx, c.Tenant.Workspace.ID, f.BindingID)
	require.NoError(t, err)
	spec := b.AllowedOperations
	spec.HTTPCalls = []bindingspec.HTTPCall{{Op: "export", Method: "POST", URL: upstream.URL + "/export/{{id}}", IntegrationID: crm.ID,
		Auth: &bindingspec.Auth{Kind: bindingspec.AuthBearer}, BodyTemplate: json.RawMessage(`{"task":"{{task_id}}"}`)}}
	spec.Actions = append(spec.Actions, bindingspec.Action{Name: "decide_and_export", Writes: []string{"record_decision"}, HTTPCalls: []string{"export"}})
	raw, err := json.Marshal(spec)
	require.NoError(t, err)
	_, err = c.P.Bindings.Update(ctx, c.Tenant.Workspace.ID, f.BindingID, "test", binding.Patch{AllowedOperations: raw})
	require.NoError(t, err)

	cl := c.signedIn(t)
	require.Equal(t, http.StatusOK, cl.get("/bindings/"+f.BindingID).Status)
	p := cl.post("/bindings/"+f.BindingID+"/try", url.Values{"op": {"export"}, "payload": {`{"id": "A 1"}`}, "task_id": {"task-7"}})
	require.Equal(t, http.StatusOK, p.Status, p.Body)
	body := html.UnescapeString(p.Body)
	require.Contains(t, body, "POST "+upstream.URL+"/export/A%201\nAuthorization: ••••••\n")
	require.Contains(t, body, `{"task":"task-7"}`)
	require.NotContains(t, body, "s3cret-token", "the credential is masked")
	require.Equal(t, "Bearer s3cret-token", gotAuth.Load(), "but sent")
	require.Contains(t, body, `"exported": true`)

	p = cl.post("/bindings/"+f.BindingID+"/try", url.Values{"op": {"decide_and_export"},
		"payload": {`{"rows": {"record_decision": {"decision": "approve"}}, "values": {"id": "9"}}`}, "task_id": {"task-7"}})
	require.Equal(t, http.StatusOK, p.Status, p.Body)
	body = html.UnescapeString(p.Body)
	require.Contains(t, body, `INSERT INTO "decisions" ("decision", "task_id") VALUES ($1, $2)`)
	require.Contains(t, body, `["approve","task-7"]`)
	require.Contains(t, body, "rolled back")
	require.EqualValues(t, 2, hits.Load())
	var decisions int64
	require.NoError(t, f.Source.DB.Raw(`SELECT count(*) FROM decisions`).Scan(&decisions).Error)
	require.Zero(t, decisions, "a tried action's writes are rolled back")

	p = cl.post("/bindings/"+f.BindingID+"/try", url.Values{"op": {"export"}, "payload": {`{}`}})
	require.Equal(t, http.StatusOK, p.Status, p.Body)
	require.Contains(t, p.Body, `data-status="400"`)
	require.Contains(t, html.UnescapeString(p.Body), `{{id}} is not in the payload`)
	require.EqualValues(t, 2, hits.Load(), "a refused try sends nothing")

	p = cl.post("/bindings/"+f.BindingID+"/try", url.Values{"op": {"export"}, "payload": {`{"id":"1"}`}, "csrf": {""}})
	require.Equal(t, http.StatusForbidden, p.Status)
	require.EqualValues(t, 2, hits.Load())
	require.EqualValues(t, 3, auditCount(t, c.Store, c.Tenant.Workspace.ID, "binding.try", f.BindingID))
}
