package api_test

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"gorm.io/gorm"

	"github.com/appruntime/appruntime/internal/served"
	"github.com/appruntime/appruntime/internal/session"
	"github.com/appruntime/appruntime/internal/testkit"
	"github.com/appruntime/appruntime/models"
)

const mintPath = "/api/app-tools/sessions"

// appToolFixture is an app-tool step with everything its mint reads: a
// tenant, an integration, a binding, two versions of a bundle, the
// configured tool, a task parked on the step's await.
type appToolFixture struct {
	Tenant      testkit.Tenant
	Integration models.Integration
	Binding     models.Binding
	Bundle      models.Bundle // the newest version (2)
	Tool        models.ConfiguredTool
	Task        models.Task
	Step        models.Step
	Await       models.TaskAwait
}

func newAppToolFixture(t *testing.T, db *gorm.DB) appToolFixture {
	t.Helper()
	f := appToolFixture{Tenant: testkit.NewTenant(t, db)}
	ws := f.Tenant.Workspace.ID
	f.Integration = models.Integration{ID: models.NewID(), WorkspaceID: ws, Name: "invoices-db", Kind: "postgres"}
	require.NoError(t, db.Create(&f.Integration).Error)
	f.Binding = models.Binding{
		ID: models.NewID(), WorkspaceID: ws, Name: "invoice review", BindingKind: "postgres",
		IntegrationID: &f.Integration.ID, Version: 1,
		AllowedOperations: models.JSON(`{
			"reads": [{"op": "list_lines", "table": "invoice_lines", "columns": ["id", "amount"]}],
			"capabilities": ["document_selection"]}`),
	}
	require.NoError(t, db.Create(&f.Binding).Error)
	bundleID := models.NewID()
	for v, sha := range []string{"1111111111111111111111111111111111111111111111111111111111111111",
		"2222222222222222222222222222222222222222222222222222222222222222"} {
		f.Bundle = models.Bundle{ID: bundleID, Version: v + 1, WorkspaceID: ws, Name: "invoice-review",
			SHA256: sha, ContentType: "text/html", Size: 1234, StorageKey: "bundles/" + bundleID + "/" + sha}
		require.NoError(t, db.Create(&f.Bundle).Error)
	}
	f.Tool = models.ConfiguredTool{
		ID: models.NewID(), WorkspaceID: ws, AgentID: f.Tenant.Agent.ID, DisplayName: "Invoice review",
		BaseTool: models.BaseAppTool, BundleID: &bundleID, BindingID: &f.Binding.ID,
		ActionSchema: models.JSON(`{"type": "object", "properties": {"decision": {"enum": ["approve", "reject"]}}}`),
		Theme:        models.JSON(`{"accent": "#0a7f5a", "density": "compact"}`),
		AwaitReview:  true,
		InputSchema:  models.JSON(`{"type": "object", "properties": {"report_id": {"type": "integer"}}}`),
	}
	require.NoError(t, db.Create(&f.Tool).Error)
	f.Task = models.Task{ID: models.NewID(), WorkspaceID: ws, AgentID: f.Tenant.Agent.ID, Title: "Invoice 59137",
		Status: models.TaskWaitingForInput}
	require.NoError(t, db.Create(&f.Task).Error)
	f.Step = f.addStep(t, db)
	f.Await = models.TaskAwait{ID: models.NewID(), TaskID: f.Task.ID, SourceType: models.AwaitSourceAppTool,
		CorrelationKey: f.Step.ID, Status: models.AwaitPending}
	require.NoError(t, db.Create(&f.Await).Error)
	return f
}

// addStep adds another app-tool step of the fixture's tool to its task.
func (f appToolFixture) addStep(t *testing.T, db *gorm.DB) models.Step {
	t.Helper()
	step := models.Step{ID: models.NewID(), TaskID: f.Task.ID, Kind: models.StepAppTool, ConfiguredToolID: &f.Tool.ID,
		Status: models.StepCompleted,
		Input:  models.MustJSON(map[string]any{"configured_tool_id": f.Tool.ID, "params": map[string]any{"report_id": 59137, "region": "EU"}})}
	require.NoError(t, db.Create(&step).Error)
	return step
}

func (a *testAPI) mint(t *testing.T, token, stepID string) response {
	t.Helper()
	return a.call(t, "POST", mintPath, token, map[string]string{"step_id": stepID})
}

func TestMintDescriptorGolden(t *testing.T) {
	t.Parallel()
	a := newTestAPI(t)
	f := newAppToolFixture(t, a.Store.DB)
	// This deployment serves some capabilities: the descriptor offers only
	// those the binding also grants (file_preview is granted but not
	// served, next_review_task served but not granted).
	// The test replaces the set the platform built, which the mint reads.
	*a.P.Served = *served.New(served.Options{
		Capabilities: []string{"list_files", "get_translation", "document_selection", "next_review_task"},
		Gateway:      a.P.Served.Gateway(),
	})

	r := a.mint(t, f.Tenant.HostToken, f.Step.ID)
	require.Equal(t, 201, r.Status, "body: %s", r.Raw)

	// The token is a live session on the step for the host token's user.
	token, _ := r.Body["session_token"].(string)
	claims, err := a.P.Sessions.Verify(context.Background(), token)
	require.NoError(t, err)
	require.Equal(t, session.Claims{
		SessionID: claims.SessionID, WorkspaceID: f.Tenant.Workspace.ID, TaskID: f.Task.ID, AgentID: f.Tenant.Agent.ID,
		StepID: f.Step.ID, ConfiguredToolID: f.Tool.ID, BindingID: f.Binding.ID, UserID: f.Tenant.Admin.ID,
		ExpiresAt: claims.ExpiresAt, Kind: session.KindTask,
	}, claims)
	require.Equal(t, claims.SessionID, r.Body["session_id"])
	expires, err := time.Parse(time.RFC3339, r.Body["expires_at"].(string))
	require.NoError(t, err)
	require.True(t, expires.Equal(claims.ExpiresAt))
	require.WithinDuration(t, time.Now().Add(session.TTL), expires, 5*time.Second)

	got := normaliseDescriptor(t, r.Raw, map[string]string{
		a.URL:                         "<api>",
		f.Step.ID:                     "<step_id>",
		f.Task.ID:                     "<task_id>",
		f.Tool.ID:                     "<configured_tool_id>",
		f.Binding.ID:                  "<binding_id>",
		f.Bundle.ID:                   "<bundle_id>",
		f.Await.ID:                    "<await_id>",
		f.Tenant.Workspace.ID:         "<workspace_id>",
		token:                         "<session_token>",
		claims.SessionID:              "<session_id>",
		r.Body["expires_at"].(string): "<expires_at>",
	})
	golden := filepath.Join("testdata", "mint_descriptor.golden.json")
	if os.Getenv("UPDATE_GOLDEN") != "" {
		require.NoError(t, os.WriteFile(golden, got, 0o644))
	}
	want, err := os.ReadFile(golden)
	require.NoError(t, err, "run with UPDATE_GOLDEN=1 to create it")
	require.Equal(t, string(want), string(got))
}

// normaliseDescriptor replaces the run's ids, token and times with stable
// placeholders and re-indents, so the golden file compares whole.
func normaliseDescriptor(t *testing.T, raw []byte, placeholders map[string]string) []byte {
	t.Helper()
	s := string(raw)
	for value, placeholder := range placeholders {
		require.NotEmpty(t, value)
		s = strings.ReplaceAll(s, value, placeholder)
	}
	var doc any
	require.NoError(t, json.Unmarshal([]byte(s), &doc))
	var out bytes.Buffer
	enc := json.NewEncoder(&out)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	require.NoError(t, enc.Encode(doc))
	return out.Bytes()
}

func TestMintRefusesWhatTheCallerMayNotMint(t *testing.T) {
	t.Parallel()
	a := newTestAPI(t)
	mine := newAppToolFixture(t, a.Store.DB)
	theirs := newAppToolFixture(t, a.Store.DB)
	toolRun := models.Step{ID: models.NewID(), TaskID: mine.Task.ID, Kind: models.StepToolRun, Status: models.StepCompleted}
	require.NoError(t, a.Store.DB.Create(&toolRun).Error)
	unknown := models.NewID()

	cases := []struct {
		name    string
		body    any
		status  int
		message string
	}{
		{"another workspace's step", map[string]string{"step_id": theirs.Step.ID}, 404, "app-tool step " + theirs.Step.ID + " not found"},
		{"unknown step", map[string]string{"step_id": unknown}, 404, "app-tool step " + unknown + " not found"},
		{"a step that is not an app-tool step", map[string]string{"step_id": toolRun.ID}, 404, "app-tool step " + toolRun.ID + " not found"},
		{"malformed step_id", map[string]string{"step_id": "step-1"}, 400, `step_id must be a UUID, got "step-1"`},
		{"step_id missing", map[string]string{}, 400, `step_id must be a UUID, got ""`},
		{"step_id of the wrong type", `{"step_id": 42}`, 400, `request body must be a JSON object {"step_id": "<uuid>"} (step_id must be a string, not number)`},
		{"not JSON", `step_id=x`, 400, `request body must be a JSON object {"step_id": "<uuid>"} (invalid JSON at byte 1: invalid character 's' looking for beginning of value)`},
		{"step_id twice", `{"step_id": "` + unknown + `", "step_id": "` + theirs.Step.ID + `"}`, 400,
			`request body must be a JSON object {"step_id": "<uuid>"} (invalid JSON: duplicate key "step_id")`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			r := a.call(t, "POST", mintPath, mine.Tenant.HostToken, tc.body)
			require.Equal(t, tc.status, r.Status, "body: %s", r.Raw)
			require.Equal(t, tc.message, r.Body["error"])
		})
	}

	// None of the refusals minted a session.
	var n int64
	require.NoError(t, a.Store.DB.Model(&models.AppSession{}).Count(&n).Error)
	require.Zero(t, n)
	// The owner of the other step can mint it.
	require.Equal(t, 201, a.mint(t, theirs.Tenant.HostToken, theirs.Step.ID).Status)
}

func TestMintNeedsAHostToken(t *testing.T) {
	t.Parallel()
	a := newTestAPI(t)
	f := newAppToolFixture(t, a.Store.DB)
	for name, token := range map[string]string{
		"no token":     "",
		"agent token":  f.Tenant.AgentToken,
		"admin token":  f.Tenant.AdminToken,
		"forged token": "art_host_forged",
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			r := a.mint(t, token, f.Step.ID)
			require.Equal(t, 401, r.Status)
			require.Equal(t, "a valid host token is required", r.Body["error"])
		})
	}
}

func TestThirdMintOnATaskRevokesTheOldest(t *testing.T) {
	t.Parallel()
	a := newTestAPI(t)
	f := newAppToolFixture(t, a.Store.DB)
	other := f.addStep(t, a.Store.DB) // a second artifact on the same task
	ctx := context.Background()

	var tokens []string
	for _, stepID := range []string{f.Step.ID, f.Step.ID, other.ID} {
		r := a.mint(t, f.Tenant.HostToken, stepID)
		require.Equal(t, 201, r.Status, "body: %s", r.Raw)
		tokens = append(tokens, r.Body["session_token"].(string))
	}
	_, err := a.P.Sessions.Verify(ctx, tokens[0])
	require.Error(t, err)
	require.Equal(t, "unauthenticated: session token revoked", err.Error())
	for _, tok := range tokens[1:] {
		_, err := a.P.Sessions.Verify(ctx, tok)
		require.NoError(t, err)
	}
	var live, revoked int64
	require.NoError(t, a.Store.DB.Model(&models.AppSession{}).Where("task_id = ? AND revoked_at IS NULL", f.Task.ID).Count(&live).Error)
	require.NoError(t, a.Store.DB.Model(&models.AppSession{}).Where("task_id = ? AND revoked_at IS NOT NULL", f.Task.ID).Count(&revoked).Error)
	require.Equal(t, int64(2), live)
	require.Equal(t, int64(1), revoked)
}

// TestARenewingMintReplacesTheSessionItNames: a host's mint naming the
// session it renews ("replaces") revokes it instead of counting, so two
// renewals leave the other artifact's session live; a malformed replaces
// is a 400.
func TestARenewingMintReplacesTheSessionItNames(t *testing.T) {
	t.Parallel()
	a := newTestAPI(t)
	f := newAppToolFixture(t, a.Store.DB)
	other := f.addStep(t, a.Store.DB)
	ctx := context.Background()

	first := a.mint(t, f.Tenant.HostToken, other.ID)
	require.Equal(t, 201, first.Status, "body: %s", first.Raw)
	mine := a.mint(t, f.Tenant.HostToken, f.Step.ID)
	require.Equal(t, 201, mine.Status, "body: %s", mine.Raw)
	for range 2 {
		body := `{"step_id": "` + f.Step.ID + `", "replaces": "` + mine.Body["session_id"].(string) + `"}`
		r := a.call(t, "POST", "/api/app-tools/sessions", f.Tenant.HostToken, []byte(body), "Content-Type", "application/json")
		require.Equal(t, 201, r.Status, "body: %s", r.Raw)
		_, err := a.P.Sessions.Verify(ctx, mine.Body["session_token"].(string))
		require.Error(t, err, "the renewed session is revoked")
		mine = r
	}
	for _, tok := range []any{first.Body["session_token"], mine.Body["session_token"]} {
		_, err := a.P.Sessions.Verify(ctx, tok.(string))
		require.NoError(t, err, "the other artifact's session and the last renewal stay live")
	}
	r := a.call(t, "POST", "/api/app-tools/sessions", f.Tenant.HostToken, []byte(`{"step_id": "`+f.Step.ID+`", "replaces": 7}`), "Content-Type", "application/json")
	require.Equal(t, 400, r.Status, "body: %s", r.Raw)
}

func TestMintReadsTheArtifactLive(t *testing.T) {
	t.Parallel()
	a := newTestAPI(t)
	f := newAppToolFixture(t, a.Store.DB)

	first := a.mint(t, f.Tenant.HostToken, f.Step.ID)
	require.Equal(t, 201, first.Status, "body: %s", first.Raw)
	require.Equal(t, false, first.Body["default_fullscreen"])
	require.Equal(t, map[string]any{"accent": "#0a7f5a", "density": "compact"}, first.Body["theme"])
	require.Equal(t, float64(2), first.Body["bundle_version"])
	require.Equal(t, f.Await.ID, first.Body["await_id"])
	require.Equal(t, true, first.Body["await_pending"])
	require.Equal(t, []any{"file_preview", "list_files", "split_document", "document_selection"}, first.Body["runtime"].(map[string]any)["capabilities"],
		"the file capabilities and the granted host one are served; get_translation is not without an engine")

	// An admin changes the display settings and pins the first bundle
	// version; a reviewer finishes the review.
	one := 1
	require.NoError(t, a.Store.DB.Model(&models.ConfiguredTool{}).Where("id = ?", f.Tool.ID).Updates(map[string]any{
		"theme": models.JSON(`{"accent": "#222222"}`), "default_fullscreen": true, "bundle_version": one,
	}).Error)
	require.NoError(t, a.Store.DB.Model(&models.TaskAwait{}).Where("id = ?", f.Await.ID).
		Updates(map[string]any{"status": models.AwaitResolved, "resolved_at": time.Now()}).Error)

	second := a.mint(t, f.Tenant.HostToken, f.Step.ID)
	require.Equal(t, 201, second.Status, "body: %s", second.Raw)
	require.Equal(t, true, second.Body["default_fullscreen"])
	require.Equal(t, map[string]any{"accent": "#222222"}, second.Body["theme"])
	require.Equal(t, float64(1), second.Body["bundle_version"])
	require.Equal(t, a.URL+"/bundles/"+f.Bundle.ID+"/1", second.Body["bundle_url"])
	require.Equal(t, strings.Repeat("1", 64), second.Body["bundle_sha"])
	require.Equal(t, f.Await.ID, second.Body["await_id"])
	require.Equal(t, false, second.Body["await_pending"])
}

func TestMintWithoutAwaitCarriesNone(t *testing.T) {
	t.Parallel()
	a := newTestAPI(t)
	f := newAppToolFixture(t, a.Store.DB)
	other := f.addStep(t, a.Store.DB) // no task_awaits row for this step

	r := a.mint(t, f.Tenant.HostToken, other.ID)
	require.Equal(t, 201, r.Status, "body: %s", r.Raw)
	require.Contains(t, r.Body, "await_id")
	require.Nil(t, r.Body["await_id"])
	require.Equal(t, false, r.Body["await_pending"])
	require.Equal(t, map[string]any{"report_id": float64(59137), "region": "EU"}, r.Body["params"])
}

// A step whose producer has not finished cannot be minted yet (409 with
// Retry-After); one whose producer failed answers 409 with its error; once
// it completes, the mint succeeds.
func TestMintWaitsForTheProducer(t *testing.T) {
	t.Parallel()
	a := newTestAPI(t)
	f := newAppToolFixture(t, a.Store.DB)
	require.NoError(t, a.Store.DB.Model(&f.Step).Update("status", models.StepRunning).Error)
	r := a.mint(t, f.Tenant.HostToken, f.Step.ID)
	require.Equal(t, 409, r.Status, "body: %s", r.Raw)
	require.Equal(t, "2", r.Header.Get("Retry-After"))
	require.Equal(t, "the artifact is still being built (its producer has not finished); retry shortly", r.Body["error"])

	require.NoError(t, a.Store.DB.Model(&f.Step).Updates(map[string]any{"status": models.StepFailed, "error": "ValueError: no rows"}).Error)
	r = a.mint(t, f.Tenant.HostToken, f.Step.ID)
	require.Equal(t, 409, r.Status, "body: %s", r.Raw)
	require.Empty(t, r.Header.Get("Retry-After"))
	require.Equal(t, "the artifact could not be built: ValueError: no rows", r.Body["error"])

	var n int64
	require.NoError(t, a.Store.DB.Model(&models.AppSession{}).Count(&n).Error)
	require.Zero(t, n, "a refused mint leaves no session")

	require.NoError(t, a.Store.DB.Model(&f.Step).Updates(map[string]any{"status": models.StepCompleted, "error": ""}).Error)
	require.Equal(t, 201, a.mint(t, f.Tenant.HostToken, f.Step.ID).Status)
}
