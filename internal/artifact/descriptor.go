package artifact

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"gorm.io/gorm"

	"github.com/appruntime/appruntime/internal/apperr"
	"github.com/appruntime/appruntime/internal/basetool"
	"github.com/appruntime/appruntime/internal/bindingspec"
	"github.com/appruntime/appruntime/internal/bundle"
	"github.com/appruntime/appruntime/internal/claim"
	"github.com/appruntime/appruntime/internal/served"
	"github.com/appruntime/appruntime/internal/session"
	"github.com/appruntime/appruntime/internal/store"
	"github.com/appruntime/appruntime/models"
)

// RuntimePath is where the runtime verbs are mounted on the API.
const RuntimePath = "/api/app-runtime"

// Verbs are the runtime verbs this backend has; a mint advertises those
// Minter.Served serves for the step's binding (served.Set.Verbs).
var Verbs = []string{"read", "write", "action", "run", "capability"}

// Versions are the reply envelopes this backend serves: v1 (the verbs' own
// shapes) and v2 (X-Nanonets-App-Runtime: v2).
var Versions = []string{"v1", "v2"}

// Descriptor is the complete live descriptor a mint returns (seed 000, "What
// the mint returns" and "Display settings"). The JSON names are the contract.
type Descriptor struct {
	SessionToken string    `json:"session_token"`
	SessionID    string    `json:"session_id"`
	ExpiresAt    time.Time `json:"expires_at"`

	BundleURL        string `json:"bundle_url"`
	BundleSHA        string `json:"bundle_sha"`
	BundleID         string `json:"bundle_id"`
	BundleVersion    int    `json:"bundle_version"`
	BindingID        string `json:"binding_id"`
	ConfiguredToolID string `json:"configured_tool_id"`
	StepID           string `json:"step_id"`
	TaskID           string `json:"task_id"`
	// Params is the step's params (step.input.params); the same value is
	// runtime.params, as the bundle receives it. Forwarded to the
	// bundle as runtime.params; {} when the step has none.
	Params json.RawMessage `json:"params"`

	ActionSchema      models.JSON `json:"action_schema"`
	Theme             models.JSON `json:"theme"`
	DefaultFullscreen bool        `json:"default_fullscreen"`
	AwaitReview       bool        `json:"await_review"`
	// AwaitID is the step's task_awaits row, or null when the step never parked the task.
	AwaitID      *string `json:"await_id"`
	AwaitPending bool    `json:"await_pending"`

	Runtime Runtime `json:"runtime"`

	agentID string // the task's agent, for the session's claims
	// stepStatus and stepError are the step's: a step whose producer has
	// not finished (or failed) cannot be minted for.
	stepStatus, stepError string
}

// Runtime is what the backend offers the bundle.
type Runtime struct {
	APIBase  string   `json:"api_base"`
	Verbs    []string `json:"verbs"`
	Versions []string `json:"versions"`
	// Capabilities are those this deployment serves and the binding grants,
	// so a bundle never negotiates onto one that would answer 501 or 403.
	Capabilities []string `json:"capabilities"`
	// HostCapabilities is the subset of Capabilities the browser host
	// performs over bridge messages; /capability refuses them.
	HostCapabilities []string `json:"host_capabilities"`
	// Tools are the binding's `tools` ops whose tool this deployment runs,
	// so a bundle can hide a control whose /run would answer 501.
	Tools []string `json:"tools"`
	// ReasonRequired are the binding's actions declaring reason_required,
	// which the runtime refuses without the reviewer's reason: the SDK asks
	// a host that offers the reason prompt for one (issue 29 §3).
	ReasonRequired []string `json:"reason_required"`
	// Params is the step's params: seed 000's "forwarded as runtime.params".
	Params json.RawMessage `json:"params"`
}

// Minter mints sessions for app-tool steps. Build it once per process
// (internal/platform); it is safe for concurrent use.
type Minter struct {
	Store    *store.Store
	Sessions *session.Issuer
	// BundleBaseURL is where bundles are served: a bundle's URL is
	// BundleBaseURL/<bundle id>/<version>.
	BundleBaseURL string
	// RuntimeBase is the absolute URL of the runtime verbs (runtime.api_base).
	RuntimeBase string
	// Served is what this deployment serves, computed once at start
	// (docs/architecture.md#what-this-deployment-serves); nil advertises
	// Verbs, no capability and no tool.
	Served *served.Set
}

// MintRequest is a host's request for a session on one step.
type MintRequest struct {
	WorkspaceID string // the host token's workspace
	UserID      string // the host token's user; the session's reviewer
	// TokenID is the host token minting (empty for the console): revoking
	// it ends the session.
	TokenID string
	StepID  string
	// TaskID, when set, is the task the caller holds (a reviewer's claim):
	// a step of any other task is the same 404, refused before a session
	// is minted, since a mint may end the oldest live session of the step's
	// task.
	TaskID string
	// Replaces is the caller's own live session on the step that this mint
	// renews (session.MintInput.Replaces).
	Replaces string
}

// Mint checks that the step is an app-tool step of the caller's workspace,
// reads its configured tool, bundle, binding and await as they are now, mints
// a session (which may revoke the task's oldest, see session.Issuer.Mint) and
// returns the descriptor. While a review claim on the task is live, only its
// holder may mint (409 naming the claim, claim.Check), checked under
// the mint's lock on the task. A step that does not exist, is not an app-tool step
// or belongs to another workspace is the same 404, so other workspaces' steps
// cannot be probed.
func (m *Minter) Mint(ctx context.Context, req MintRequest) (Descriptor, error) {
	d, err := m.Live(ctx, req.WorkspaceID, req.StepID)
	if err != nil {
		return Descriptor{}, err
	}
	if req.TaskID != "" && d.TaskID != req.TaskID {
		return Descriptor{}, apperr.NotFoundf("task %s has no app-tool step %s", req.TaskID, req.StepID)
	}
	if err := mintable(d.stepStatus, d.stepError); err != nil {
		return Descriptor{}, err
	}
	token, claims, err := m.Sessions.Mint(ctx, session.MintInput{
		WorkspaceID: req.WorkspaceID, TaskID: d.TaskID, AgentID: d.agentID, StepID: d.StepID,
		ConfiguredToolID: d.ConfiguredToolID, BindingID: d.BindingID, UserID: req.UserID, TokenID: req.TokenID,
		Replaces: req.Replaces,
		// While someone holds the task's review claim, only they may mint:
		// another mint would act on their task, and may end their session.
		GuardFunc: func(ctx context.Context, tx *gorm.DB) error {
			return claim.Check(ctx, tx, d.TaskID, req.UserID)
		},
	})
	if err != nil {
		return Descriptor{}, err
	}
	d.SessionToken, d.SessionID, d.ExpiresAt = token, claims.SessionID, claims.ExpiresAt
	return d, nil
}

// Live returns the live descriptor of an app-tool step of workspaceID as a
// mint would, without a session (its session fields are empty): what the
// host merges over the feed's snapshot of the artifact. The same 404s as Mint.
func (m *Minter) Live(ctx context.Context, workspaceID, stepID string) (Descriptor, error) {
	if !models.IsID(stepID) {
		return Descriptor{}, apperr.Invalidf("step_id must be a UUID, got %q", stepID)
	}
	db := m.Store.DB.WithContext(ctx)
	step, task, err := appToolStep(db, workspaceID, stepID)
	if err != nil {
		return Descriptor{}, err
	}
	if step.ConfiguredToolID == nil {
		return Descriptor{}, apperr.Conflictf("step %s has no configured tool, so its bundle cannot be resolved", step.ID)
	}
	var tool models.ConfiguredTool
	err = db.Where("id = ? AND workspace_id = ? AND base_tool = ?", *step.ConfiguredToolID, workspaceID, models.BaseAppTool).
		Take(&tool).Error
	if err := store.NotFound(err, "artifact: load configured tool", "app tool "+*step.ConfiguredToolID); err != nil {
		return Descriptor{}, err
	}
	bun, err := toolBundle(db, tool)
	if err != nil {
		return Descriptor{}, err
	}
	bind, spec, err := toolBinding(db, tool)
	if err != nil {
		return Descriptor{}, err
	}
	params, err := stepParams(step)
	if err != nil {
		return Descriptor{}, err
	}
	awaitID, pending, err := stepAwait(db, step)
	if err != nil {
		return Descriptor{}, err
	}
	capabilities, host := bindingspec.OfferedCapabilities(spec, m.Served.Capability)
	tools, err := m.servedTools(db, task, spec)
	if err != nil {
		return Descriptor{}, err
	}
	verbs := Verbs
	if m.Served != nil {
		verbs = m.Served.Verbs(bind.BindingKind, spec, len(tools) > 0)
	}
	return Descriptor{
		agentID:           task.AgentID,
		stepStatus:        step.Status,
		stepError:         step.Error,
		BundleURL:         bundle.URL(m.BundleBaseURL, bun.ID, bun.Version),
		BundleSHA:         bun.SHA256,
		BundleID:          bun.ID,
		BundleVersion:     bun.Version,
		BindingID:         bind.ID,
		ConfiguredToolID:  tool.ID,
		StepID:            step.ID,
		TaskID:            task.ID,
		Params:            params,
		ActionSchema:      tool.ActionSchema,
		Theme:             tool.Theme,
		DefaultFullscreen: tool.DefaultFullscreen,
		AwaitReview:       tool.AwaitReview,
		AwaitID:           awaitID,
		AwaitPending:      pending,
		Runtime: Runtime{
			APIBase:          m.RuntimeBase,
			Verbs:            verbs,
			Versions:         Versions,
			Capabilities:     capabilities,
			HostCapabilities: host,
			Tools:            tools,
			ReasonRequired:   reasonRequired(spec),
			Params:           params,
		},
	}, nil
}

// reasonRequired names spec's actions that declare reason_required, never
// nil (the descriptor lists none as []).
func reasonRequired(spec bindingspec.Spec) []string {
	out := []string{}
	for _, a := range spec.Actions {
		if a.ReasonRequired {
			out = append(out, a.Name)
		}
	}
	return out
}

// ProducerRetryAfter is the Retry-After of a mint refused because the
// step's producer is still seeding its rows.
const ProducerRetryAfter = 2 * time.Second

// mintable refuses a session on a step still being built (its producer has
// not finished: 409 with Retry-After) or whose build failed (409 with the
// producer's error).
func mintable(status, errText string) error {
	switch status {
	case models.StepRunning:
		e := apperr.Conflictf("the artifact is still being built (its producer has not finished); retry shortly")
		e.RetryAfter = ProducerRetryAfter
		return e
	case models.StepFailed:
		return apperr.Conflictf("the artifact could not be built: %s", errText)
	}
	return nil
}

// appToolStep loads the step and its task, refusing with one 404 anything
// the caller may not mint for.
func appToolStep(db *gorm.DB, workspaceID, stepID string) (models.Step, models.Task, error) {
	notFound := apperr.NotFoundf("app-tool step %s not found", stepID)
	var step models.Step
	err := db.Where("id = ? AND kind = ?", stepID, models.StepAppTool).Take(&step).Error
	if errors.Is(err, gorm.ErrRecordNotFound) {
		return step, models.Task{}, notFound
	}
	if err != nil {
		return step, models.Task{}, fmt.Errorf("artifact: load step: %w", err)
	}
	var task models.Task
	err = db.Where("id = ? AND workspace_id = ?", step.TaskID, workspaceID).Take(&task).Error
	if errors.Is(err, gorm.ErrRecordNotFound) {
		return step, task, notFound
	}
	if err != nil {
		return step, task, fmt.Errorf("artifact: load task: %w", err)
	}
	return step, task, nil
}

// toolBundle loads the tool's pinned bundle version, or the newest one.
func toolBundle(db *gorm.DB, tool models.ConfiguredTool) (models.Bundle, error) {
	if tool.BundleID == nil {
		return models.Bundle{}, apperr.Conflictf("app tool %q names no bundle", tool.DisplayName)
	}
	return bundle.Resolve(db.Statement.Context, db, tool.WorkspaceID, *tool.BundleID, tool.BundleVersion)
}

// toolBinding loads the tool's binding and decodes what it grants.
func toolBinding(db *gorm.DB, tool models.ConfiguredTool) (models.Binding, bindingspec.Spec, error) {
	var b models.Binding
	var spec bindingspec.Spec
	if tool.BindingID == nil {
		return b, spec, apperr.Conflictf("app tool %q names no binding", tool.DisplayName)
	}
	err := db.Where("id = ? AND workspace_id = ?", *tool.BindingID, tool.WorkspaceID).Take(&b).Error
	if err := store.NotFound(err, "artifact: load binding", "binding "+*tool.BindingID); err != nil {
		return b, spec, err
	}
	if len(b.AllowedOperations) > 0 {
		if err := json.Unmarshal(b.AllowedOperations, &spec); err != nil {
			return b, spec, fmt.Errorf("artifact: decode allowed_operations of binding %s: %w", b.ID, err)
		}
	}
	return b, spec, nil
}

// stepParams returns step.input.params, or {} when the step has none.
func stepParams(step models.Step) (json.RawMessage, error) {
	var input struct {
		Params json.RawMessage `json:"params"`
	}
	if err := step.Input.Decode(&input); err != nil {
		return nil, fmt.Errorf("artifact: decode input of step %s: %w", step.ID, err)
	}
	if len(input.Params) == 0 || string(input.Params) == "null" {
		return json.RawMessage(`{}`), nil
	}
	return input.Params, nil
}

// stepAwait returns the step's await (source app_tool, correlation key = the
// step id) and whether it is still pending; nil when it has none.
func stepAwait(db *gorm.DB, step models.Step) (*string, bool, error) {
	var aw models.TaskAwait
	err := db.Where("task_id = ? AND source_type = ? AND correlation_key = ?", step.TaskID, models.AwaitSourceAppTool, step.ID).
		Take(&aw).Error
	if errors.Is(err, gorm.ErrRecordNotFound) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, fmt.Errorf("artifact: load await: %w", err)
	}
	return &aw.ID, aw.Status == models.AwaitPending, nil
}

// servedTools lists the binding's tool ops whose tool /run can run here:
// a configured tool of the task's agent (by display name) or a base tool
// named directly (translate_text), with its base tool served.
func (m *Minter) servedTools(db *gorm.DB, task models.Task, spec bindingspec.Spec) ([]string, error) {
	out := []string{}
	if m.Served == nil || len(spec.Tools) == 0 {
		return out, nil
	}
	names := make([]string, 0, len(spec.Tools))
	for _, t := range spec.Tools {
		names = append(names, t.Tool)
	}
	var rows []models.ConfiguredTool
	if err := db.Select("display_name", "base_tool").
		Where("agent_id = ? AND workspace_id = ? AND display_name IN ?", task.AgentID, task.WorkspaceID, names).
		Find(&rows).Error; err != nil {
		return nil, fmt.Errorf("artifact: load run tools: %w", err)
	}
	base := map[string]string{}
	for _, name := range basetool.Names(basetool.IsDirect) {
		base[name] = name
	}
	for _, r := range rows {
		if row, _ := basetool.Lookup(r.BaseTool); row.Runnable {
			base[r.DisplayName] = r.BaseTool
		}
	}
	for _, t := range spec.Tools {
		if b, ok := base[t.Tool]; ok && m.Served.Tool(b) {
			out = append(out, t.Op)
		}
	}
	return out, nil
}
