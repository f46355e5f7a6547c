package console_test

import (
	"context"
	"encoding/base64"
	"html"
	"net/http"
	"net/url"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/appruntime/appruntime/internal/auth"
	"github.com/appruntime/appruntime/internal/demo"
	"github.com/appruntime/appruntime/internal/store"
	"github.com/appruntime/appruntime/internal/testkit"
	"github.com/appruntime/appruntime/internal/web"
	"github.com/appruntime/appruntime/internal/webhook"
	"github.com/appruntime/appruntime/models"
)

// onceShown is the secret a page shows once.
var onceShown = regexp.MustCompile(`<code class="secret" id="[a-z-]+">([^<]+)</code>`)

// TestAgentForms creates, edits, rotates and deletes an agent through the
// console's forms: each change is the admin API's, audited as it is; a
// refused form comes back with the input and the message beside its field,
// and changes nothing.
func TestAgentForms(t *testing.T) {
	t.Parallel()
	c := newTestConsole(t)
	cl := c.signedIn(t)
	ws := c.Tenant.Workspace.ID
	agents := func() int64 { return workspaceRows(t, c.Store, &models.Agent{}, ws) }
	before := agents()

	// Refused: the input comes back, the message beside its field.
	cl.get("/agents")
	p := cl.post("/agents", url.Values{"name": {"Mail agent"}, "resume_webhook_url": {"https://user:pw@hooks.example.com/resume"}})
	require.Equal(t, http.StatusBadRequest, p.Status, p.Body)
	require.Contains(t, p.Body, `value="Mail agent"`)
	require.Contains(t, p.Body, `value="https://user:pw@hooks.example.com/resume"`)
	require.Regexp(t, `resume_webhook_url.*<span class="field-error" role="alert">resume_webhook_url may not carry credentials`, p.Body)
	p = cl.post("/agents", url.Values{"name": {"  "}, "resume_webhook_url": {"https://hooks.example.com/resume"}})
	require.Equal(t, http.StatusBadRequest, p.Status, p.Body)
	require.Contains(t, p.Body, `<span class="field-error" role="alert">name is required</span>`)
	require.Contains(t, p.Body, `value="https://hooks.example.com/resume"`)
	require.Equal(t, before, agents(), "a refused form creates nothing")

	// Created: the secret is shown once.
	p = cl.post("/agents", url.Values{"name": {"Mail agent"}, "resume_webhook_url": {"https://hooks.example.com/resume"}})
	require.Equal(t, http.StatusCreated, p.Status, p.Body)
	m := onceShown.FindStringSubmatch(p.Body)
	require.NotNil(t, m, p.Body)
	require.Contains(t, p.Body, "will not be shown again")
	var ag models.Agent
	require.NoError(t, c.Store.DB.Where("workspace_id = ? AND name = ?", ws, "Mail agent").Take(&ag).Error)
	require.Equal(t, "https://hooks.example.com/resume", ag.ResumeWebhookURL)
	require.NotEmpty(t, ag.WebhookSecretEnc)
	require.EqualValues(t, 1, auditCount(t, c.Store, ws, "agent.create", ag.ID))
	page := cl.get("/agents/" + ag.ID)
	require.Equal(t, http.StatusOK, page.Status, page.Body)
	require.NotContains(t, page.Body, m[1], "the secret is never shown again")
	require.Contains(t, cl.get("/agents").Body, `href="/agents/`+ag.ID+`"`, "the list links the agent's page")

	// Edited: a refusal keeps the input; a save is audited.
	p = cl.post("/agents/"+ag.ID, url.Values{"name": {"Renamed"}, "resume_webhook_url": {"ftp://hooks.example.com/x"}})
	require.Equal(t, http.StatusBadRequest, p.Status, p.Body)
	require.Contains(t, p.Body, `value="Renamed"`)
	require.Contains(t, p.Body, `<span class="field-error" role="alert">resume_webhook_url must be an absolute http or https URL</span>`)
	require.NoError(t, c.Store.DB.Take(&ag, "id = ?", ag.ID).Error)
	require.Equal(t, "Mail agent", ag.Name, "a refused edit changes nothing")
	p = cl.post("/agents/"+ag.ID, url.Values{"name": {"Renamed"}, "resume_webhook_url": {""}})
	require.Equal(t, http.StatusSeeOther, p.Status, p.Body)
	require.Equal(t, "/agents/"+ag.ID+"?notice=agent_saved", p.Header.Get("Location"))
	require.NoError(t, c.Store.DB.Take(&ag, "id = ?", ag.ID).Error)
	require.Equal(t, "Renamed", ag.Name)
	require.Empty(t, ag.ResumeWebhookURL, "an empty URL removes the webhook")
	require.EqualValues(t, 1, auditCount(t, c.Store, ws, "agent.update", ag.ID))

	// Rotated: a new secret, shown once with the overlap rule.
	cl.get("/agents/" + ag.ID)
	p = cl.post("/agents/"+ag.ID+"/webhook-secret/rotate", url.Values{"overlap_seconds": {"99999999"}})
	require.Equal(t, http.StatusBadRequest, p.Status, p.Body)
	require.Contains(t, p.Body, `<span class="field-error" role="alert">overlap_seconds is 0 to 604800</span>`)
	p = cl.post("/agents/"+ag.ID+"/webhook-secret/rotate", url.Values{"overlap_seconds": {"3600"}})
	require.Equal(t, http.StatusOK, p.Status, p.Body)
	next := onceShown.FindStringSubmatch(p.Body)
	require.NotNil(t, next, p.Body)
	require.NotEqual(t, m[1], next[1])
	require.Contains(t, p.Body, "keeps signing beside it for 1 hour")
	require.EqualValues(t, 1, auditCount(t, c.Store, ws, "agent.rotate_webhook_secret", ag.ID))
	cl.get("/agents/" + ag.ID)
	p = cl.post("/agents/"+ag.ID+"/webhook-secret/rotate", url.Values{"overlap_seconds": {"604800"}})
	require.Equal(t, http.StatusOK, p.Status, p.Body)
	require.Contains(t, p.Body, "keeps signing beside it for 7 days")
	cl.get("/agents/" + ag.ID)
	p = cl.post("/agents/"+ag.ID+"/webhook-secret/rotate", url.Values{"overlap_seconds": {"0"}})
	require.Equal(t, http.StatusOK, p.Status, p.Body)
	require.Contains(t, p.Body, "was retired at once")

	// Deleted: only with the box ticked; the page says what goes with it.
	page = cl.get("/agents/" + ag.ID)
	require.Contains(t, page.Body, "also deletes its tasks")
	p = cl.post("/agents/"+ag.ID+"/delete", nil)
	require.Equal(t, http.StatusBadRequest, p.Status, p.Body)
	require.Contains(t, p.Body, `<span class="field-error" role="alert">tick the box`)
	require.NoError(t, c.Store.DB.Take(&ag, "id = ?", ag.ID).Error, "not deleted without the box")
	p = cl.post("/agents/"+ag.ID+"/delete", url.Values{"confirm": {"yes"}})
	require.Equal(t, http.StatusSeeOther, p.Status, p.Body)
	require.Equal(t, "/agents?notice=agent_deleted", p.Header.Get("Location"))
	require.Equal(t, before, agents())
	require.EqualValues(t, 1, auditCount(t, c.Store, ws, "agent.delete", ag.ID))
	require.Equal(t, http.StatusNotFound, cl.get("/agents/"+ag.ID).Status)
}

// workspaceRows counts the rows of model's table in the workspace.
func workspaceRows(t *testing.T, st *store.Store, model any, workspaceID string) int64 {
	t.Helper()
	var n int64
	require.NoError(t, st.DB.Model(model).Where("workspace_id = ?", workspaceID).Count(&n).Error)
	return n
}

// TestAnotherWorkspacesAgentAndUserAreNotFound: the new pages and forms
// see only the admin's own workspace.
func TestAnotherWorkspacesAgentAndUserAreNotFound(t *testing.T) {
	t.Parallel()
	c := newTestConsole(t)
	theirs := testkit.NewTenant(t, c.Store.DB)
	cl := c.signedIn(t)
	for _, path := range []string{"/agents/" + theirs.Agent.ID, "/users/" + theirs.Admin.ID} {
		require.Equal(t, http.StatusNotFound, cl.get(path).Status, path)
	}
	cl.get("/agents")
	for _, post := range []struct {
		path string
		form url.Values
	}{
		{"/agents/" + theirs.Agent.ID, url.Values{"name": {"Mine now"}}},
		{"/agents/" + theirs.Agent.ID + "/webhook-secret/rotate", url.Values{"overlap_seconds": {"0"}}},
		{"/agents/" + theirs.Agent.ID + "/delete", url.Values{"confirm": {"yes"}}},
		{"/users/" + theirs.Admin.ID, url.Values{"email": {"x@example.test"}, "role": {"reviewer"}}},
		{"/users/" + theirs.Admin.ID + "/password", nil},
		{"/users/" + theirs.Admin.ID + "/delete", url.Values{"confirm": {"yes"}}},
	} {
		require.Equal(t, http.StatusNotFound, cl.post(post.path, post.form).Status, post.path)
	}
	var ag models.Agent
	require.NoError(t, c.Store.DB.Take(&ag, "id = ?", theirs.Agent.ID).Error)
	require.Equal(t, theirs.Agent.Name, ag.Name)
	require.NoError(t, c.Store.DB.Take(&models.User{}, "id = ?", theirs.Admin.ID).Error)
}

// TestAgentToolExampleSavesInDevMode: on the dev mode's SQLite with the
// demo seeded (which has no component integration), the agent-tool
// editor's example saves as it is.
func TestAgentToolExampleSavesInDevMode(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st := testkit.SQLite(t)
	p := newPlatformOn(t, testkit.Config(testkit.DatabaseURL(), testkit.RedisURL()), st)
	secrets := demo.Secrets{AdminPassword: testPassword, HostToken: auth.NewTokenSecret(models.ScopeHost),
		AgentToken: auth.NewTokenSecret(models.ScopeAgent), AdminToken: auth.NewTokenSecret(models.ScopeAdmin),
		WebhookSecret: base64.RawURLEncoding.EncodeToString([]byte("0123456789abcdef0123456789abcdef"))}
	info, err := demo.Seed(ctx, p, secrets, filepath.Join(t.TempDir(), "demo-data.db"))
	require.NoError(t, err)
	ln, err := web.Listen("127.0.0.1:0")
	require.NoError(t, err)
	c := &testConsole{URL: "http://" + ln.Addr().String(), P: p, Store: st}
	serve(t, mustConsole(t, p), ln)
	cl := c.client(t)
	require.Equal(t, http.StatusSeeOther, cl.login(demo.AdminEmail, testPassword).Status)

	base := "/agents/" + info.AgentID + "/tools"
	page := cl.get(base)
	require.Equal(t, http.StatusOK, page.Status, page.Body)
	m := regexp.MustCompile(`(?s)<form method="post" action="` + base + `"[^>]*>.*?<textarea[^>]*name="declaration"[^>]*>(.*?)</textarea>`).FindStringSubmatch(page.Body)
	require.NotNil(t, m, page.Body)
	example := html.UnescapeString(m[1])
	require.Contains(t, example, `"type": "url"`, "no component integration in the demo: a url target")
	res := cl.post(base, url.Values{"declaration": {example}})
	require.Equal(t, http.StatusSeeOther, res.Status, res.Body)
	var n int64
	require.NoError(t, st.DB.Model(&models.AgentToolDeclaration{}).Where("agent_id = ? AND name = ?", info.AgentID, "save_bookmark").Count(&n).Error)
	require.EqualValues(t, 1, n)
}

// TestAgentFormChoosesWebhookEvents checks the agent form's event-type
// checkboxes (docs/agent-platforms.md#webhook-event-catalogue): all checked
// by default, a narrowed choice stored and shown, "All event types" back to
// null, and a post without the checkboxes' marker leaves the choice alone.
func TestAgentFormChoosesWebhookEvents(t *testing.T) {
	t.Parallel()
	c := newTestConsole(t)
	cl := c.signedIn(t)
	id := c.Tenant.Agent.ID
	stored := func() []string {
		var ag models.Agent
		require.NoError(t, c.Store.DB.Take(&ag, "id = ?", id).Error)
		return ag.WebhookEventList()
	}
	checked := func(body, value string) bool {
		return strings.Contains(body, `name="webhook_events" value="`+value+`" checked`)
	}

	page := cl.get("/agents/" + id)
	require.Equal(t, http.StatusOK, page.Status, page.Body)
	require.Contains(t, page.Body, `name="webhook_events_all" value="1" checked`)
	for _, typ := range webhook.EventTypeNames() {
		require.True(t, checked(page.Body, typ), "%s is received by default", typ)
	}

	form := url.Values{"name": {c.Tenant.Agent.Name}, "resume_webhook_url": {"https://hooks.example.com/r"},
		"webhook_events_form": {"1"}, "webhook_events": {"task.resumed", "task.aborted"}}
	p := cl.post("/agents/"+id, form)
	require.Equal(t, http.StatusSeeOther, p.Status, p.Body)
	require.Equal(t, []string{"task.resumed", "task.aborted"}, stored())
	page = cl.get("/agents/" + id)
	require.NotContains(t, page.Body, `name="webhook_events_all" value="1" checked`)
	require.True(t, checked(page.Body, "task.aborted"))
	require.False(t, checked(page.Body, "reply.stored"))

	p = cl.post("/agents/"+id, url.Values{"name": {"Renamed"}, "resume_webhook_url": {"https://hooks.example.com/r"}})
	require.Equal(t, http.StatusSeeOther, p.Status, p.Body)
	require.Equal(t, []string{"task.resumed", "task.aborted"}, stored(), "no marker: the choice stays")

	form.Set("webhook_events", "task.created")
	p = cl.post("/agents/"+id, form)
	require.Equal(t, http.StatusBadRequest, p.Status, p.Body)
	require.Contains(t, p.Body, `unknown event type &#34;task.created&#34;`)
	require.Equal(t, []string{"task.resumed", "task.aborted"}, stored(), "a refused save changes nothing")

	form.Del("webhook_events")
	p = cl.post("/agents/"+id, form)
	require.Equal(t, http.StatusSeeOther, p.Status, p.Body)
	require.Equal(t, []string{}, stored(), "nothing checked: no type")

	form.Set("webhook_events_all", "1")
	p = cl.post("/agents/"+id, form)
	require.Equal(t, http.StatusSeeOther, p.Status, p.Body)
	require.Nil(t, stored(), "all: every type")
}
