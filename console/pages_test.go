package console_test

import (
	"context"
	"encoding/json"
	"fmt"
	"html"
	"io"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/appruntime/appruntime/internal/auth"
	"github.com/appruntime/appruntime/internal/binding"
	"github.com/appruntime/appruntime/internal/bindingspec"
	"github.com/appruntime/appruntime/internal/demo"
	"github.com/appruntime/appruntime/internal/outbox"
	"github.com/appruntime/appruntime/internal/review"
	"github.com/appruntime/appruntime/internal/testkit"
	"github.com/appruntime/appruntime/internal/webhook"
	"github.com/appruntime/appruntime/models"
)

func TestEveryPageRendersForAnAdmin(t *testing.T) {
	t.Parallel()
	c := newTestConsole(t)
	f := seedDemo(t, c.P, c.Tenant)
	cl := c.signedIn(t)

	// Opening the artifact mints a session, which the sessions page lists.
	cl.get("/tasks/" + f.TaskID)
	art := cl.post("/tasks/"+f.TaskID+"/steps/"+f.StepID+"/artifact", nil)
	require.Equal(t, http.StatusOK, art.Status, art.Body)

	for _, tc := range []struct {
		path string
		want []string
	}{
		{"/", []string{c.Tenant.Workspace.Name, "Parked tasks needing attention", "Review the ACME invoices", `href="/tasks/` + f.TaskID + `"`, "waiting_for_input",
			"Oldest parked", "<td>" + c.Tenant.Agent.Name + `</td><td class="count">1</td>`}},
		{"/bindings", []string{"Invoice review binding", "Invoices database", "v1"}},
		{"/bindings/" + f.BindingID, []string{"Invoice review binding", `name="allowed_operations"`, "&#34;list_invoices&#34;", "Save as v2"}},
		{"/bindings/" + f.BindingID + "/versions", []string{"v1", "current", c.Tenant.Admin.Email, "reads.list_invoices"}},
		{"/tools", []string{"Invoice review", "app_tool", c.Tenant.Agent.Name}},
		{"/tools/" + f.ToolID, []string{"Invoice review", f.BundleID, f.BindingID, "the task parks until an action resolves it", "report_id"}},
		{"/bundles", []string{"invoice-review", "text/html"}},
		{"/bundles/" + f.BundleID, []string{"invoice-review", "/bundles/" + f.BundleID + "/1"}},
		{"/integrations", []string{"Invoices database", "postgres", `<span class="badge">dsn</span>`, "never their values"}},
		{"/agents", []string{c.Tenant.Agent.Name, `href="/agents/` + c.Tenant.Agent.ID + `/tools"`}},
		{"/agents/" + c.Tenant.Agent.ID + "/tools", []string{"This agent has no tool yet.", "save_bookmark", "Create"}},
		{"/users", []string{c.Tenant.Admin.Email, f.ReviewerEmail, "reviewer"}},
		{"/tokens", []string{"Issue a token", `<option value="host" selected>host</option>`, "agent", "active"}},
		{"/tasks", []string{"Review the ACME invoices", "waiting_for_input", c.Tenant.Agent.Name}},
		{"/tasks?status=waiting_for_input", []string{"Review the ACME invoices"}},
		{"/tasks/" + f.TaskID, []string{"Review the ACME invoices", f.StepID, "Open artifact", "Release", "Abort", "artifact", "pending"}},
		{"/sessions", []string{"Review the ACME invoices", c.Tenant.Admin.Email, "Revoke"}},
		{"/audit", []string{"binding.create", "configured_tool.create", c.Tenant.Admin.Email}},
	} {
		t.Run(tc.path, func(t *testing.T) {
			p := cl.get(tc.path)
			require.Equal(t, http.StatusOK, p.Status, p.Body)
			require.Equal(t, "text/html; charset=utf-8", p.Header.Get("Content-Type"))
			require.Equal(t, "no-store", p.Header.Get("Cache-Control"))
			frames := "frame-src 'none'"
			if strings.HasPrefix(tc.path, "/tasks/") {
				frames = "frame-src 'self' https:" // app assets and embedUrl results
			}
			require.Contains(t, p.Header.Get("Content-Security-Policy"), frames)
			require.Equal(t, "DENY", p.Header.Get("X-Frame-Options"))
			for _, w := range tc.want {
				require.Contains(t, p.Body, w)
			}
		})
	}

	t.Run("filtered out", func(t *testing.T) {
		p := cl.get("/tasks?status=completed")
		require.Equal(t, http.StatusOK, p.Status)
		require.NotContains(t, p.Body, "Review the ACME invoices")
		require.Contains(t, p.Body, "No task is completed.")
	})

	t.Run("secrets are never shown", func(t *testing.T) {
		for _, path := range []string{"/integrations", "/bindings/" + f.BindingID, "/tools/" + f.ToolID} {
			p := cl.get(path)
			require.NotContains(t, p.Body, "postgres://") // never the DSN
			require.NotContains(t, p.Body, "search_path")
		}
	})

	t.Run("errors render the error page", func(t *testing.T) {
		for _, tc := range []struct {
			path    string
			status  int
			message string
		}{
			{"/bindings/" + models.NewID(), 404, "not found"},
			{"/tasks/not-a-task", 404, "task not-a-task not found"},
			{"/tasks?status=parked", 400, "status &#34;parked&#34; must be one of"},
			{"/no/such/page", 404, "no such route"},
			{"/tasks/" + f.TaskID + "/steps/" + models.NewID() + "/artifact", 404, "has no app-tool step"},
		} {
			p := cl.get(tc.path)
			require.Equal(t, tc.status, p.Status, tc.path)
			require.Contains(t, p.Body, fmt.Sprintf("<h1>%d</h1>", tc.status), tc.path)
			require.Contains(t, p.Body, tc.message, tc.path)
		}
	})

	t.Run("static files", func(t *testing.T) {
		for _, path := range []string{"/static/console.css", "/static/host.js"} {
			p := cl.get(path)
			require.Equal(t, http.StatusOK, p.Status, path)
			require.NotEmpty(t, p.Body)
		}
	})
}

func TestOtherWorkspacesAreNotFound(t *testing.T) {
	t.Parallel()
	c := newTestConsole(t)
	other := testkit.NewTenant(t, c.Store.DB)
	f := seedDemo(t, c.P, other)
	cl := c.signedIn(t)
	for _, path := range []string{
		"/bindings/" + f.BindingID, "/bindings/" + f.BindingID + "/versions", "/tools/" + f.ToolID,
		"/bundles/" + f.BundleID, "/tasks/" + f.TaskID, "/tasks/" + f.TaskID + "/steps/" + f.StepID + "/artifact",
	} {
		require.Equal(t, http.StatusNotFound, cl.get(path).Status, path)
	}
	for _, path := range []string{
		"/tasks/" + f.TaskID + "/awaits/" + f.AwaitID + "/release",
		"/tasks/" + f.TaskID + "/awaits/" + f.AwaitID + "/abort",
		"/tasks/" + f.TaskID + "/steps/" + f.StepID + "/artifact",
		"/bindings/" + f.BindingID + "/versions/1/restore",
	} {
		require.Equal(t, http.StatusNotFound, cl.post(path, url.Values{"note": {"a reason"}}).Status, path)
	}
	var aw models.TaskAwait
	require.NoError(t, c.Store.DB.Where("id = ?", f.AwaitID).Take(&aw).Error)
	require.Equal(t, models.AwaitPending, aw.Status, "another workspace's await is untouched")
	for _, path := range []string{"/", "/tasks", "/bindings", "/sessions", "/audit"} {
		p := cl.get(path)
		require.Equal(t, http.StatusOK, p.Status)
		require.NotContains(t, p.Body, f.TaskID, path)
		require.NotContains(t, p.Body, f.BindingID, path)
	}
}

var textarea = regexp.MustCompile(`(?s)<textarea name="allowed_operations"[^>]*>(.*?)</textarea>`)

func TestBindingSave(t *testing.T) {
	t.Parallel()
	c := newTestConsole(t)
	f := seedDemo(t, c.P, c.Tenant)
	cl := c.signedIn(t)
	ctx := context.Background()

	p := cl.get("/bindings/" + f.BindingID)
	m := textarea.FindStringSubmatch(p.Body)
	require.NotNil(t, m)
	var spec bindingspec.Spec
	require.NoError(t, json.Unmarshal([]byte(html.UnescapeString(m[1])), &spec), "the editor holds the saved document")
	require.Equal(t, "list_invoices", spec.Reads[0].Op)

	t.Run("success", func(t *testing.T) {
		spec.Reads[0].Limit = 7
		edited, err := json.MarshalIndent(spec, "", "  ")
		require.NoError(t, err)
		p := cl.post("/bindings/"+f.BindingID, url.Values{"allowed_operations": {string(edited)}, "version": {"1"}})
		require.Equal(t, http.StatusSeeOther, p.Status, p.Body)
		require.Equal(t, "/bindings/"+f.BindingID+"?notice=saved", p.Header.Get("Location"))
		b, err := c.P.Bindings.Get(ctx, c.Tenant.Workspace.ID, f.BindingID)
		require.NoError(t, err)
		require.Equal(t, 2, b.Version)
		require.Equal(t, 7, b.AllowedOperations.Reads[0].Limit)
		versions, err := c.P.Bindings.Versions(ctx, c.Tenant.Workspace.ID, f.BindingID)
		require.NoError(t, err)
		require.Equal(t, "user:"+c.Tenant.Admin.ID, versions[0].SavedBy)
		require.Equal(t, int64(1), auditCount(t, c.Store, c.Tenant.Workspace.ID, binding.AuditUpdate, f.BindingID))
		p = cl.get("/bindings/" + f.BindingID + "?notice=saved")
		require.Contains(t, p.Body, "Saved as a new version.")
		require.Contains(t, p.Body, "Save as v3")
		p = cl.get("/bindings/" + f.BindingID + "/versions")
		require.Contains(t, p.Body, "reads.list_invoices.limit")
	})

	t.Run("validation failure keeps the unsaved text", func(t *testing.T) {
		for _, tc := range []struct {
			name, text, version string
			status              int
			message             string
		}{
			{"unknown write in an action", `{"reads":[],"writes":[],"actions":[{"name":"go","writes":["nope"]}]}`, "2", 400, `nope`},
			{"not JSON", `{"reads": [`, "2", 400, "allowed_operations"},
			{"empty", ``, "2", 400, "allowed_operations is required"},
			{"edited from an old version", `{"reads":[]}`, "1", 409, "is at version 2, not 1"},
		} {
			t.Run(tc.name, func(t *testing.T) {
				p := cl.post("/bindings/"+f.BindingID, url.Values{"allowed_operations": {tc.text}, "version": {tc.version}})
				require.Equal(t, tc.status, p.Status, p.Body)
				require.Contains(t, p.Body, `class="refusal"`)
				require.Contains(t, p.Body, html.EscapeString(tc.message))
				m := textarea.FindStringSubmatch(p.Body)
				require.NotNil(t, m)
				require.Equal(t, tc.text, html.UnescapeString(m[1]), "the admin's text is kept")
				require.Contains(t, p.Body, `name="version" value="`+tc.version+`"`)
			})
		}
		b, err := c.P.Bindings.Get(ctx, c.Tenant.Workspace.ID, f.BindingID)
		require.NoError(t, err)
		require.Equal(t, 2, b.Version, "nothing refused was saved")
	})

	t.Run("restore", func(t *testing.T) {
		p := cl.get("/bindings/" + f.BindingID + "/versions")
		require.Contains(t, p.Body, "Restore v1")
		p = cl.post("/bindings/"+f.BindingID+"/versions/1/restore", nil)
		require.Equal(t, http.StatusSeeOther, p.Status, p.Body)
		b, err := c.P.Bindings.Get(ctx, c.Tenant.Workspace.ID, f.BindingID)
		require.NoError(t, err)
		require.Equal(t, 3, b.Version)
		require.Equal(t, 50, b.AllowedOperations.Reads[0].Limit, "v1's limit is back")
		require.Equal(t, int64(1), auditCount(t, c.Store, c.Tenant.Workspace.ID, binding.AuditRestore, f.BindingID))
		p = cl.get(p.Header.Get("Location"))
		require.Contains(t, p.Body, "restored from v1")
		require.Equal(t, http.StatusNotFound, cl.post("/bindings/"+f.BindingID+"/versions/99/restore", nil).Status)
	})
}

// TestBindingPageWarnsOfUnscopedWrites: a binding saved before the rule
// that an update's fixed values must be key columns says which ops are
// refused until it is fixed; a binding within the rule says nothing.
func TestBindingPageWarnsOfUnscopedWrites(t *testing.T) {
	t.Parallel()
	c := newTestConsole(t)
	f := seedDemo(t, c.P, c.Tenant)
	cl := c.signedIn(t)
	const warning = "these write ops are refused (403) until the binding is fixed"
	require.NotContains(t, cl.get("/bindings/"+f.BindingID).Body, warning)

	spec := demo.Spec()
	spec.Writes = append(spec.Writes, bindingspec.Write{Op: "reassign", Table: "decisions", Mode: bindingspec.ModeUpdate,
		KeyColumns: []string{"id"}, Columns: []string{"decision"}, FixedValues: map[string]any{"task_id": "{{task_id}}"}})
	require.NoError(t, c.Store.DB.Model(&models.Binding{}).Where("id = ?", f.BindingID).
		Update("allowed_operations", models.MustJSON(spec)).Error)
	p := cl.get("/bindings/" + f.BindingID)
	require.Equal(t, http.StatusOK, p.Status)
	require.Contains(t, p.Body, warning)
	require.Contains(t, p.Body, html.EscapeString(`write op "reassign" (mode update): fixed_values column "task_id" is not one of its key_columns`))
}

func TestReleaseAndAbort(t *testing.T) {
	t.Parallel()
	c := newTestConsole(t)
	f := seedDemo(t, c.P, c.Tenant)
	cl := c.signedIn(t)
	db, ws := c.Store.DB, c.Tenant.Workspace.ID
	actor := "user:" + c.Tenant.Admin.ID

	t.Run("release", func(t *testing.T) {
		p := cl.post("/tasks/"+f.TaskID+"/awaits/"+f.AwaitID+"/release", nil)
		require.Equal(t, http.StatusBadRequest, p.Status, "a release takes a reason: %s", p.Body)
		p = cl.post("/tasks/"+f.TaskID+"/awaits/"+f.AwaitID+"/release", url.Values{"note": {"reviewer left; approved by phone"}})
		require.Equal(t, http.StatusSeeOther, p.Status, p.Body)
		require.Equal(t, "/tasks/"+f.TaskID+"?notice=released", p.Header.Get("Location"))

		var aw models.TaskAwait
		require.NoError(t, db.Where("id = ?", f.AwaitID).Take(&aw).Error)
		require.Equal(t, models.AwaitResolved, aw.Status)
		require.Equal(t, actor, aw.ResolvedBy)
		require.Equal(t, review.ReasonAdminRelease, aw.Reason)
		require.NotNil(t, aw.ResolvedAt)

		var rows []models.Outbox
		require.NoError(t, db.Where("kind = ?", outbox.KindResumeEvent).Find(&rows).Error)
		require.Len(t, rows, 1, "one event, which resumes the task as an action's does")
		var ev review.ResumePayload
		require.NoError(t, rows[0].Payload.Decode(&ev))
		// Issue 29 §2: a release is task.released, and the agent is told
		// the admin's reason (docs/agent-platforms.md#webhook-event-catalogue).
		require.Equal(t, review.ResumePayload{
			Type: webhook.TaskReleased, TaskID: f.TaskID, AgentID: c.Tenant.Agent.ID, WorkspaceID: ws, StepID: f.StepID,
			AwaitID: f.AwaitID, ResolvedBy: actor, ResolvedAt: ev.ResolvedAt, Reason: review.ReasonAdminRelease,
			Note: "reviewer left; approved by phone",
		}, ev)

		require.Equal(t, int64(1), auditCount(t, c.Store, ws, review.AuditAwaitRelease, f.AwaitID))
		var feed models.FeedEvent
		require.NoError(t, db.Where("task_id = ? AND type = ?", f.TaskID, models.FeedAwaitResolved).Take(&feed).Error)
		require.Equal(t, actor, feed.Actor)
		require.Contains(t, string(feed.Payload), "reviewer left; approved by phone", "the feed keeps the reason")
		var entry models.AuditEntry
		require.NoError(t, db.Where("action = ? AND target_id = ?", review.AuditAwaitRelease, f.AwaitID).Take(&entry).Error)
		require.Contains(t, string(entry.Detail), "reviewer left; approved by phone", "the audit log keeps the reason")

		page := cl.get(p.Header.Get("Location"))
		require.Contains(t, page.Body, "The await was released")
		require.Contains(t, page.Body, "admin_release")
		require.Contains(t, page.Body, "by "+c.Tenant.Admin.Email, "the page names the admin")
		require.NotContains(t, page.Body, ">Release</button>", "a settled await offers no buttons")

		again := cl.post("/tasks/"+f.TaskID+"/awaits/"+f.AwaitID+"/release", url.Values{"note": {"again"}})
		require.Equal(t, http.StatusConflict, again.Status)
		require.Contains(t, again.Body, "is already resolved, not pending")
		var n int64
		require.NoError(t, db.Model(&models.Outbox{}).Where("kind = ?", outbox.KindResumeEvent).Count(&n).Error)
		require.Equal(t, int64(1), n, "released once, one resume event")
	})

	t.Run("abort", func(t *testing.T) {
		g := seedParkedTask(t, c, f)
		p := cl.post("/tasks/"+g.taskID+"/awaits/"+g.awaitID+"/abort", url.Values{"note": {"vendor withdrew the invoices"}})
		require.Equal(t, http.StatusSeeOther, p.Status, p.Body)
		require.Equal(t, "/tasks/"+g.taskID+"?notice=aborted", p.Header.Get("Location"))

		var aw models.TaskAwait
		require.NoError(t, db.Where("id = ?", g.awaitID).Take(&aw).Error)
		require.Equal(t, models.AwaitAborted, aw.Status)
		require.Equal(t, actor, aw.ResolvedBy)
		require.Equal(t, review.ReasonAdminAbort, aw.Reason)
		var tk models.Task
		require.NoError(t, db.Where("id = ?", g.taskID).Take(&tk).Error)
		require.Equal(t, models.TaskFailed, tk.Status)

		var feed models.FeedEvent
		require.NoError(t, db.Where("task_id = ? AND type = ?", g.taskID, models.FeedAwaitAborted).Take(&feed).Error)
		require.Contains(t, string(feed.Payload), "vendor withdrew the invoices")
		require.Equal(t, int64(1), auditCount(t, c.Store, ws, review.AuditAwaitAbort, g.awaitID))

		var n int64
		require.NoError(t, db.Model(&models.Outbox{}).Where("kind = ? AND payload::text LIKE ?", outbox.KindResumeEvent, "%"+g.taskID+"%").Count(&n).Error)
		require.EqualValues(t, 1, n, "the agent is told")
		require.NoError(t, db.Model(&models.Outbox{}).Where("kind = ? AND payload::text LIKE ?", outbox.KindResumeEvent, "%vendor withdrew the invoices%").
			Where("payload::text LIKE ?", "%"+g.taskID+"%").Count(&n).Error)
		require.EqualValues(t, 1, n, "with the admin's reason")
		require.NoError(t, db.Model(&models.Outbox{}).Where("kind = ? AND payload::text LIKE ?", outbox.KindResumeEvent, "%task.resumed%").
			Where("payload::text LIKE ?", "%"+g.taskID+"%").Count(&n).Error)
		require.Zero(t, n, "an abort resumes nothing: its event is task.aborted")

		page := cl.get(p.Header.Get("Location"))
		require.Contains(t, page.Body, "The await was aborted")
		require.Contains(t, page.Body, "await_aborted")

		again := cl.post("/tasks/"+g.taskID+"/awaits/"+g.awaitID+"/release", url.Values{"note": {"again"}})
		require.Equal(t, http.StatusConflict, again.Status)
		require.Contains(t, again.Body, "is already aborted, not pending")
	})

	t.Run("a missing or too long note is refused", func(t *testing.T) {
		g := seedParkedTask(t, c, f)
		p := cl.post("/tasks/"+g.taskID+"/awaits/"+g.awaitID+"/abort", url.Values{"note": {strings.Repeat("x", review.MaxAbortNoteLength+1)}})
		require.Equal(t, http.StatusBadRequest, p.Status)
		p = cl.post("/tasks/"+g.taskID+"/awaits/"+g.awaitID+"/abort", url.Values{"note": {"   "}})
		require.Equal(t, http.StatusBadRequest, p.Status)
		var aw models.TaskAwait
		require.NoError(t, db.Where("id = ?", g.awaitID).Take(&aw).Error)
		require.Equal(t, models.AwaitPending, aw.Status)
	})
}

// parked is a further task parked on an app-tool step of the fixture's tool.
type parked struct{ taskID, stepID, awaitID string }

func seedParkedTask(t *testing.T, c *testConsole, f fixture) parked {
	t.Helper()
	db := c.Store.DB
	tk := models.Task{ID: models.NewID(), WorkspaceID: c.Tenant.Workspace.ID, AgentID: c.Tenant.Agent.ID, Title: "Another review", Status: models.TaskWaitingForInput}
	require.NoError(t, db.Create(&tk).Error)
	st := models.Step{ID: models.NewID(), TaskID: tk.ID, Kind: models.StepAppTool, ConfiguredToolID: &f.ToolID, Status: models.StepCompleted}
	require.NoError(t, db.Create(&st).Error)
	aw := models.TaskAwait{ID: models.NewID(), TaskID: tk.ID, SourceType: models.AwaitSourceAppTool, CorrelationKey: st.ID, Status: models.AwaitPending}
	require.NoError(t, db.Create(&aw).Error)
	return parked{taskID: tk.ID, stepID: st.ID, awaitID: aw.ID}
}

var secretShown = regexp.MustCompile(`id="token-secret">([^<]+)<`)

func TestTokens(t *testing.T) {
	t.Parallel()
	c := newTestConsole(t)
	cl := c.signedIn(t)
	ctx := context.Background()

	p := cl.post("/tokens", url.Values{"scope": {"host"}, "name": {"reviewer app"}, "user_id": {c.Tenant.Admin.ID}, "agent_id": {c.Tenant.Agent.ID}})
	require.Equal(t, http.StatusCreated, p.Status, p.Body)
	m := secretShown.FindStringSubmatch(p.Body)
	require.NotNil(t, m, p.Body)
	secret := m[1]
	require.True(t, strings.HasPrefix(secret, "art_host_"))
	principal, err := auth.Verify(ctx, c.Store.DB, secret, models.ScopeHost)
	require.NoError(t, err, "the secret shown authenticates")
	require.Equal(t, c.Tenant.Admin.ID, principal.UserID)

	list := cl.get("/tokens")
	require.Contains(t, list.Body, "reviewer app")
	require.NotContains(t, list.Body, secret, "the secret is shown once")
	var used models.APIToken
	require.NoError(t, c.Store.DB.Take(&used, "id = ?", principal.TokenID).Error)
	require.NotNil(t, used.LastUsedAt, "the use above stamped last_used_at")
	require.Contains(t, list.Body, "<td>"+used.LastUsedAt.UTC().Format("2006-01-02 15:04:05 UTC")+"</td>", "the list shows when a token was last used")
	require.Equal(t, int64(1), auditCount(t, c.Store, c.Tenant.Workspace.ID, "token.issue", principal.TokenID))

	refused := cl.post("/tokens", url.Values{"scope": {"agent"}, "name": {"no agent"}})
	require.Equal(t, http.StatusBadRequest, refused.Status)
	require.Contains(t, refused.Body, "agent_id is required for an agent token")
	require.Contains(t, refused.Body, `value="no agent"`, "the form keeps what was typed")

	p = cl.post("/tokens/"+principal.TokenID+"/revoke", nil)
	require.Equal(t, http.StatusSeeOther, p.Status, p.Body)
	_, err = auth.Verify(ctx, c.Store.DB, secret, models.ScopeHost)
	require.Error(t, err, "a revoked token no longer authenticates")
	require.Equal(t, int64(1), auditCount(t, c.Store, c.Tenant.Workspace.ID, "token.revoke", principal.TokenID))
	require.Contains(t, cl.get("/tokens?notice=token_revoked").Body, "Token revoked")
}

func TestSessionRevoke(t *testing.T) {
	t.Parallel()
	c := newTestConsole(t)
	f := seedDemo(t, c.P, c.Tenant)
	cl := c.signedIn(t)
	cl.get("/tasks/" + f.TaskID)
	art := cl.post("/tasks/"+f.TaskID+"/steps/"+f.StepID+"/artifact", nil)
	require.Equal(t, http.StatusOK, art.Status, art.Body)

	var s models.AppSession
	require.NoError(t, c.Store.DB.Where("step_id = ?", f.StepID).Take(&s).Error)
	require.Equal(t, c.Tenant.Admin.ID, *s.UserID, "the session is the signed-in admin's")
	require.Contains(t, cl.get("/sessions").Body, shortOf(s.ID))

	p := cl.post("/sessions/"+s.ID+"/revoke", nil)
	require.Equal(t, http.StatusSeeOther, p.Status, p.Body)
	require.NoError(t, c.Store.DB.Where("id = ?", s.ID).Take(&s).Error)
	require.NotNil(t, s.RevokedAt)
	require.Equal(t, int64(1), auditCount(t, c.Store, c.Tenant.Workspace.ID, "session.revoke", s.ID))
	require.NotContains(t, cl.get("/sessions").Body, shortOf(s.ID), "a revoked session is not live")
	require.Equal(t, http.StatusNotFound, cl.post("/sessions/"+models.NewID()+"/revoke", nil).Status)
}

func shortOf(id string) string { return id[strings.LastIndexByte(id, '-')+1:] }

var initAttr = regexp.MustCompile(`data-init="([^"]+)"`)

func TestArtifactPage(t *testing.T) {
	t.Parallel()
	c := newTestConsole(t)
	f := seedDemo(t, c.P, c.Tenant)
	cl := c.signedIn(t)
	p := cl.post("/tasks/"+f.TaskID+"/steps/"+f.StepID+"/artifact", nil)
	require.Equal(t, http.StatusOK, p.Status, p.Body)

	csp := map[string]string{}
	for _, d := range strings.Split(p.Header.Get("Content-Security-Policy"), "; ") {
		name, value, _ := strings.Cut(d, " ")
		csp[name] = value
	}
	require.Equal(t, "http://127.0.0.1", csp["frame-src"], "the bundle origin of testkit.Config and nothing else")
	require.Equal(t, "'self'", csp["script-src"])
	require.Equal(t, "'none'", csp["frame-ancestors"])
	require.Contains(t, p.Body, `sandbox="allow-scripts"`)
	require.NotContains(t, p.Body, "allow-same-origin")
	require.Contains(t, p.Body, `src="http://127.0.0.1/bundles/`+f.BundleID+`/1"`)
	require.Contains(t, p.Body, `<script src="/static/host.js"></script>`)
	require.Contains(t, p.Body, `id="await-status">pending<`)

	m := initAttr.FindStringSubmatch(p.Body)
	require.NotNil(t, m)
	var init struct {
		Type         string          `json:"type"`
		SessionToken string          `json:"session_token"`
		ExpiresAt    string          `json:"expires_at"`
		APIBase      string          `json:"api_base"`
		Params       json.RawMessage `json:"params"`
		Schema       json.RawMessage `json:"schema"`
		Theme        json.RawMessage `json:"theme"`
		Runtime      struct {
			APIBase string   `json:"api_base"`
			Verbs   []string `json:"verbs"`
		} `json:"runtime"`
		AwaitID string `json:"await_id"`
	}
	require.NoError(t, json.Unmarshal([]byte(html.UnescapeString(m[1])), &init))
	require.Equal(t, "init", init.Type)
	require.Equal(t, "http://127.0.0.1/api/app-runtime", init.APIBase)
	require.Equal(t, init.APIBase, init.Runtime.APIBase)
	require.Contains(t, init.Runtime.Verbs, "action")
	require.JSONEq(t, `{"report_id":59137}`, string(init.Params))
	require.JSONEq(t, `{"approve_invoice":{"label":"Approve and resume"}}`, string(init.Schema))
	require.JSONEq(t, `{"accent":"#2456d6"}`, string(init.Theme))
	require.Equal(t, f.AwaitID, init.AwaitID)
	require.NotEmpty(t, init.ExpiresAt)
	claims, err := c.P.Sessions.Verify(context.Background(), init.SessionToken)
	require.NoError(t, err, "the posted token is a live session")
	require.Equal(t, f.StepID, claims.StepID)
	require.Equal(t, c.Tenant.Admin.ID, claims.UserID)
}

// TestAGetNeverMintsASession: a link to the artifact page (which any site
// can make a signed-in browser follow, cookies and all) shows the step and
// a button; only the button's POST, with the form's CSRF token, mints. A
// task keeps two live sessions, so a mint from a link could end a
// reviewer's.
func TestAGetNeverMintsASession(t *testing.T) {
	t.Parallel()
	c := newTestConsole(t)
	f := seedDemo(t, c.P, c.Tenant)
	cl := c.signedIn(t)
	path := "/tasks/" + f.TaskID + "/steps/" + f.StepID + "/artifact"
	sessions := func() int64 {
		var n int64
		require.NoError(t, c.Store.DB.Model(&models.AppSession{}).Where("step_id = ?", f.StepID).Count(&n).Error)
		return n
	}

	p := cl.get(path)
	require.Equal(t, http.StatusOK, p.Status, p.Body)
	require.Contains(t, p.Body, `<form method="post" action="`+path+`">`)
	require.Contains(t, p.Body, `id="open-artifact"`)
	require.NotContains(t, p.Body, "data-init", "no session token on a GET")
	require.NotContains(t, p.Body, "<iframe")
	require.Contains(t, p.Body, `id="await-status">pending<`)
	require.Zero(t, sessions(), "a GET minted nothing")

	forged := cl.post(path, url.Values{"csrf": {""}})
	require.Equal(t, http.StatusForbidden, forged.Status, "a cross-site form post has no token")
	require.Zero(t, sessions())

	cl.get(path)
	opened := cl.post(path, nil)
	require.Equal(t, http.StatusOK, opened.Status, opened.Body)
	require.Contains(t, opened.Body, "data-init")
	require.Equal(t, int64(1), sessions(), "the button's POST minted one")
}

// TestConcurrentRendering renders pages from many goroutines at once; run
// with -race it catches shared state in templates and handlers.
func TestConcurrentRendering(t *testing.T) {
	t.Parallel()
	c := newTestConsole(t)
	f := seedDemo(t, c.P, c.Tenant)
	cl := c.signedIn(t)
	paths := []string{"/", "/tasks", "/tasks/" + f.TaskID, "/bindings/" + f.BindingID, "/bindings/" + f.BindingID + "/versions", "/audit", "/tokens"}
	want := map[string]string{}
	for _, path := range paths {
		p := cl.get(path)
		require.Equal(t, http.StatusOK, p.Status, path)
		want[path] = stripVolatile(p.Body)
	}
	var wg sync.WaitGroup
	errs := make(chan error, 64)
	for i := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := range 6 {
				path := paths[(i+j)%len(paths)]
				req, _ := http.NewRequest(http.MethodGet, c.URL+path, nil)
				res, err := cl.http.Do(req)
				if err != nil {
					errs <- err
					return
				}
				body, err := io.ReadAll(res.Body)
				res.Body.Close()
				if err != nil {
					errs <- err
					return
				}
				if res.StatusCode != http.StatusOK || stripVolatile(string(body)) != want[path] {
					errs <- fmt.Errorf("%s: status %d, body differs from the sequential render", path, res.StatusCode)
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
}

// ages change between renders ("3m" → "4m"); nothing else may.
var volatile = regexp.MustCompile(`(<1m|&lt;1m|\d+[dhm]( \d+[hm])?)`)

func stripVolatile(s string) string { return volatile.ReplaceAllString(s, "AGE") }

// TestTaskPageShowsTheOutcome checks that the task page shows what a
// resolving action decided (issue 29 §3): the outcome and the reviewer's
// reason of the await's resume event.
func TestTaskPageShowsTheOutcome(t *testing.T) {
	t.Parallel()
	c := newTestConsole(t)
	f := seedDemo(t, c.P, c.Tenant)
	cl := c.signedIn(t)
	page := cl.get("/tasks/" + f.TaskID)
	require.Equal(t, http.StatusOK, page.Status, page.Body)
	require.NotContains(t, page.Body, "outcome:")

	ev := review.ResumePayload{Type: webhook.TaskResumed, TaskID: f.TaskID, AwaitID: f.AwaitID,
		Decision: &webhook.Decision{Outcome: "reject", Reason: "duplicate of INV-1041", Writes: []webhook.Write{}}}
	require.NoError(t, c.Store.DB.Create(&models.FeedEvent{TaskID: f.TaskID, Type: models.FeedTaskResumed, Actor: "system",
		Payload: models.MustJSON(ev)}).Error)
	page = cl.get("/tasks/" + f.TaskID)
	require.Equal(t, http.StatusOK, page.Status, page.Body)
	require.Contains(t, page.Body, `<span class="outcome outcome-reject">outcome: reject</span>`)
	require.Contains(t, page.Body, "duplicate of INV-1041")
}
