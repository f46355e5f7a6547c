package console_test

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/appruntime/appruntime/internal/document/documenttest"
	"github.com/appruntime/appruntime/models"
)

// postJSON posts body to path as the host script does: the CSRF token in
// its header, JSON accepted.
func (cl *client) postJSON(path string, body any) (page, map[string]any) {
	cl.t.Helper()
	raw, err := json.Marshal(body)
	require.NoError(cl.t, err)
	req, err := http.NewRequest(http.MethodPost, cl.base+path, bytes.NewReader(raw))
	require.NoError(cl.t, err)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json")
	req.Header.Set("X-CSRF-Token", cl.csrf)
	p := cl.do(req)
	var out map[string]any
	_ = json.Unmarshal([]byte(p.Body), &out)
	return p, out
}

var reviewTaskPath = regexp.MustCompile(`^/review/tasks/([0-9a-f-]{36})$`)

func TestReviewerPages(t *testing.T) {
	t.Parallel()
	c := newTestConsole(t)
	f := seedDemo(t, c.P, c.Tenant)
	ctx := context.Background()
	_, err := c.P.Files.Upload(ctx, f.TaskID, "invoice.pdf", "", bytes.NewReader(documenttest.PDF("ACME Corp invoice total 1250.00", "Terms: net 30")))
	require.NoError(t, err)
	require.NoError(t, c.Store.DB.Create(&models.AgentKeyValue{ID: models.NewID(), TaskID: f.TaskID, AgentID: c.Tenant.Agent.ID,
		Key: "vendor", Value: models.JSON(`"ACME Corp"`)}).Error)
	// The reviewer asks for the next task while holding one: the claim
	// limit (TestReviewPoolsPage) is not what this test is about.
	require.NoError(t, c.Store.DB.Model(&models.Workspace{}).Where("id = ?", c.Tenant.Workspace.ID).Update("review_claim_limit", 2).Error)

	cl := c.client(t)
	p := cl.login(f.ReviewerEmail, testPassword)
	require.Equal(t, http.StatusSeeOther, p.Status, p.Body)
	require.Equal(t, "/review", p.Header.Get("Location"), "a reviewer lands on the review page")
	for _, path := range []string{"/", "/tasks", "/bindings", "/tasks/" + f.TaskID} {
		p = cl.get(path)
		require.Equal(t, http.StatusForbidden, p.Status, path)
		require.NotContains(t, p.Body, `href="/bindings"`, "no admin navigation for a reviewer")
	}
	home := cl.get("/review")
	require.Equal(t, http.StatusOK, home.Status)
	require.Contains(t, home.Body, `id="review-next"`)

	p = cl.post("/review/next", nil)
	require.Equal(t, http.StatusSeeOther, p.Status, p.Body)
	m := reviewTaskPath.FindStringSubmatch(p.Header.Get("Location"))
	require.NotNil(t, m, p.Header.Get("Location"))
	require.Equal(t, f.TaskID, m[1])

	task := cl.get(p.Header.Get("Location"))
	require.Equal(t, http.StatusOK, task.Status, task.Body)
	require.Contains(t, task.Body, "ACME Corp invoice total 1250.00", "page 1's text is in the viewer")
	require.Contains(t, task.Body, `data-page="2"`)
	require.Contains(t, task.Body, "<dt>vendor</dt><dd>ACME Corp</dd>")
	require.Contains(t, task.Body, `data-pending="true"`, "the artifact opens at once while the await is pending")
	require.Contains(t, task.Header.Get("Content-Security-Policy"), "frame-src http://")

	// The host script mints the session it mounts the artifact with.
	r, body := cl.postJSON("/review/tasks/"+f.TaskID+"/session?step="+f.StepID, nil)
	require.Equal(t, http.StatusOK, r.Status, r.Body)
	require.Equal(t, true, body["await_pending"])
	require.True(t, strings.HasPrefix(body["bundle_url"].(string), "http"))
	init := body["init"].(map[string]any)
	require.Equal(t, "init", init["type"])
	require.NotEmpty(t, init["session_token"])

	// The host's answer to the SDK's renew_session: a fresh session that
	// replaces the one the bundle holds; a malformed body mints nothing.
	first := body["session_id"].(string)
	r, renewed := cl.postJSON("/review/tasks/"+f.TaskID+"/session?step="+f.StepID, map[string]string{"replaces": first})
	require.Equal(t, http.StatusOK, r.Status, r.Body)
	require.NotEqual(t, first, renewed["session_id"])
	require.NotEqual(t, init["session_token"], renewed["init"].(map[string]any)["session_token"])
	var replaced models.AppSession
	require.NoError(t, c.Store.DB.Take(&replaced, "id = ?", first).Error)
	require.NotNil(t, replaced.RevokedAt, "the renewal replaced the first session")
	for _, bad := range []any{map[string]string{"replaces": "not an id"}, map[string]string{"replace": first}} {
		r, refusal := cl.postJSON("/review/tasks/"+f.TaskID+"/session?step="+f.StepID, bad)
		require.Equal(t, http.StatusBadRequest, r.Status, "%v: %s", bad, r.Body)
		require.NotEmpty(t, refusal["error"], "the host script is answered in JSON: %s", r.Body)
	}

	// The host script's citation and translation calls: bodies are strict
	// like every other (an unknown field or a repeated key is a 400), and
	// a refusal is JSON the script tells the bundle (citation_error).
	for _, path := range []string{"/citations", "/translation"} {
		for _, bad := range []string{`{"citation_ids":[1],"extra":1}`, `{"citation_ids":[1],"citation_ids":[2]}`, `[`} {
			req, err := http.NewRequest(http.MethodPost, cl.base+"/review/tasks/"+f.TaskID+path, strings.NewReader(bad))
			require.NoError(t, err)
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Accept", "application/json")
			req.Header.Set("X-CSRF-Token", cl.csrf)
			r := cl.do(req)
			require.Equal(t, http.StatusBadRequest, r.Status, "%s %s: %s", path, bad, r.Body)
			var refusal map[string]any
			require.NoError(t, json.Unmarshal([]byte(r.Body), &refusal), r.Body)
			require.NotEmpty(t, refusal["error"])
		}
	}
	r, refusal := cl.postJSON("/review/tasks/"+f.TaskID+"/citations", map[string]any{"citation_ids": []int64{987654321}})
	require.Equal(t, http.StatusNotFound, r.Status, r.Body)
	require.Contains(t, refusal["error"], "987654321", "the unknown id is named: %s", r.Body)

	// A step of a task the reviewer does not hold mints nothing there (a
	// mint may end that task's oldest live session, someone else's).
	var held models.Step
	require.NoError(t, c.Store.DB.Take(&held, "id = ?", f.StepID).Error)
	elsewhere := models.Task{ID: models.NewID(), WorkspaceID: c.Tenant.Workspace.ID, AgentID: c.Tenant.Agent.ID, Status: models.TaskRunning}
	require.NoError(t, c.Store.DB.Create(&elsewhere).Error)
	otherStep := models.Step{ID: models.NewID(), TaskID: elsewhere.ID, Kind: models.StepAppTool, ConfiguredToolID: held.ConfiguredToolID, Status: models.StepCompleted}
	require.NoError(t, c.Store.DB.Create(&otherStep).Error)
	for range 3 {
		r, refusal := cl.postJSON("/review/tasks/"+f.TaskID+"/session?step="+otherStep.ID, nil)
		require.Equal(t, http.StatusNotFound, r.Status, r.Body)
		require.NotEmpty(t, refusal["error"], "the host script is answered in JSON: %s", r.Body)
	}
	var minted int64
	require.NoError(t, c.Store.DB.Model(&models.AppSession{}).Where("task_id = ?", elsewhere.ID).Count(&minted).Error)
	require.Zero(t, minted, "no session was minted on the other task")

	// Nothing else is parked: the bridge's request_next_review says so.
	r, body = cl.postJSON("/review/next", nil)
	require.Equal(t, http.StatusOK, r.Status, r.Body)
	require.Nil(t, body["task"])

	// Another reviewer cannot open a task someone holds.
	other, err := c.P.Admin.CreateUser(ctx, c.Tenant.Workspace.ID, "test", adminInput("rev2-"+models.NewID()[:8]+"@example.test", models.RoleReviewer))
	require.NoError(t, err)
	cl2 := c.client(t)
	require.Equal(t, http.StatusSeeOther, cl2.login(other.Email, testPassword).Status)
	require.Equal(t, http.StatusConflict, cl2.get("/review/tasks/"+f.TaskID).Status)
	p = cl2.post("/review/next", nil)
	require.Equal(t, http.StatusOK, p.Status)
	require.Contains(t, p.Body, "Nothing to review right now.")

	// The holder puts it back; then the other reviewer gets it.
	cl.get("/review/tasks/" + f.TaskID)
	p = cl.post("/review/tasks/"+f.TaskID+"/abort", url.Values{})
	require.Equal(t, http.StatusSeeOther, p.Status, p.Body)
	require.Equal(t, "/review?notice=review_aborted", p.Header.Get("Location"))
	cl2.get("/review")
	p = cl2.post("/review/next", nil)
	require.Equal(t, http.StatusSeeOther, p.Status)
	require.Equal(t, "/review/tasks/"+f.TaskID, p.Header.Get("Location"))
}
