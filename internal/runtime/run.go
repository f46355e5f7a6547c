package runtime

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"gorm.io/gorm"

	"github.com/appruntime/appruntime/internal/apperr"
	"github.com/appruntime/appruntime/internal/basetool"
	"github.com/appruntime/appruntime/internal/binding"
	"github.com/appruntime/appruntime/internal/bindingspec"
	"github.com/appruntime/appruntime/internal/jobwait"
	"github.com/appruntime/appruntime/internal/requestid"
	"github.com/appruntime/appruntime/internal/session"
	"github.com/appruntime/appruntime/jobs"
	"github.com/appruntime/appruntime/models"
)

// RunJobs runs a /run job on the worker fleet and waits for its outcome
// (internal/jobwait.Waiter).
type RunJobs interface {
	Do(ctx context.Context, job jobwait.Job) (json.RawMessage, error)
}

// Run runs a `tools` op on the worker fleet and waits for it. The op maps to
// a configured tool (by display name, within the session's agent and
// workspace) or a base tool named directly; only the input keys the op
// lists reach the tool, and the session's ids always win. A binding that
// lists a stored setting in params is 403; a tool that is neither is 501.
func (s *Service) Run(ctx context.Context, c session.Claims, body []byte) (Result, error) {
	v, op, err := prelude[*bindingspec.Tool, map[string]json.RawMessage](ctx, s, c, body, "run", (*binding.Loaded).Tool)
	if err != nil {
		return Result{}, err
	}
	payload := v.p
	if err := s.Limiter.Allow(ctx, c.Surface()); err != nil {
		return Result{}, err
	}
	toolID, base, err := s.resolveTool(ctx, c, op.Tool)
	if err != nil {
		return Result{}, err
	}
	if err := bindingspec.CheckParams(base, op.Params); err != nil {
		return Result{}, err
	}
	if s.Jobs == nil || !s.Served.Tool(base) {
		return Result{}, apperr.NotImplementedf("this deployment has no executor for tool %q", op.Tool)
	}
	input, err := runInput(c, op.Params, payload)
	if err != nil {
		return Result{}, err
	}
	queue, budget := basetool.RunsOn(s.Queues, base)
	if s.RunDeadlineFunc != nil {
		budget = s.RunDeadlineFunc(base)
	}
	// The process's bound on runs in flight comes before the surface's
	// extraction slots: a run refused here has taken nothing shared
	// (docs/operators.md#run-on-the-worker-fleet).
	releaseRun, err := s.RunBulkhead.Acquire(ctx)
	if err != nil {
		return Result{}, err
	}
	defer releaseRun()
	deadline := time.Now().Add(budget)
	if row, _ := basetool.Lookup(base); row.Slotted {
		release, err := s.ExtractionSlots.AcquireUntil(ctx, c.Surface(), deadline)
		if err != nil {
			return Result{}, err
		}
		defer release()
	}
	out, err := s.Jobs.Do(ctx, jobwait.Job{
		Args: jobs.RunTool{
			TaskID: c.TaskID, StepID: c.StepID, AgentID: c.AgentID, WorkspaceID: c.WorkspaceID,
			ConfiguredToolID: toolID, BaseTool: base, Op: op.Op, Input: input, Record: op.Records(), Actor: actor(c),
		},
		Queue: queue, Deadline: deadline, Headers: requestid.TaskHeaders(ctx), Workspace: c.WorkspaceID,
	})
	if err != nil {
		return Result{}, err
	}
	return Result{Kind: "run", Body: out}, nil
}

// resolveTool finds the tool an op names: a configured tool of the
// session's agent and workspace by display name, else a base tool that runs
// with nothing to configure. Anything else is 501.
func (s *Service) resolveTool(ctx context.Context, c session.Claims, name string) (toolID, base string, err error) {
	var t models.ConfiguredTool
	err = s.Store.DB.WithContext(ctx).Select("id", "base_tool").
		Where("agent_id = ? AND workspace_id = ? AND display_name = ?", c.AgentID, c.WorkspaceID, name).
		Order("created_at").Take(&t).Error
	row, isBase := basetool.Lookup(name)
	switch {
	case err == nil && runnable(t.BaseTool):
		return t.ID, t.BaseTool, nil
	case err == nil:
		return "", "", apperr.NotImplementedf("configured tool %q is an app tool, which /run cannot run", name)
	case !errors.Is(err, gorm.ErrRecordNotFound):
		return "", "", fmt.Errorf("runtime: find tool %q: %w", name, err)
	case isBase && row.Direct:
		return "", name, nil
	default:
		return "", "", apperr.NotImplementedf("tool %q is neither a configured tool of this agent nor a base tool this deployment runs", name)
	}
}

// runnable says whether /run runs a configured tool of base.
func runnable(base string) bool {
	t, _ := basetool.Lookup(base)
	return t.Runnable
}

// runInput keeps the payload keys the op lists and sets the session's ids
// over anything the bundle sent under their names.
func runInput(c session.Claims, params []string, payload map[string]json.RawMessage) (json.RawMessage, error) {
	in := make(map[string]any, len(params)+4)
	for _, p := range params {
		if v, ok := payload[p]; ok {
			in[p] = v
		}
	}
	for k, v := range c.Values() {
		in[k] = v
	}
	raw, err := json.Marshal(in)
	if err != nil {
		return nil, fmt.Errorf("runtime: encode run input: %w", err)
	}
	return raw, nil
}

// Capability serves a platform feature on the session's own task. Host
// capabilities are performed by the browser and refused here (400); one the
// binding does not grant is 403; one this deployment does not serve is 501;
// a surface calling faster than its rate is 429.
func (s *Service) Capability(ctx context.Context, c session.Claims, body []byte) (Result, error) {
	v, err := begin[json.RawMessage](ctx, s, c, body)
	if err != nil {
		return Result{}, err
	}
	r, b := v.Request, v.b
	capability, known := bindingspec.LookupCapability(r.Op)
	if !known {
		return Result{}, apperr.Forbiddenf("capability %q is not granted by this binding", r.Op)
	}
	if capability.Host {
		return Result{}, apperr.Invalidf("%s is performed by the host over bridge messages, not by /capability", r.Op)
	}
	if !b.Grants(r.Op) {
		return Result{}, apperr.Forbiddenf("capability %q is not granted by this binding", r.Op)
	}
	if s.Capabilities == nil || !s.Served.Capability(r.Op) {
		return Result{}, apperr.NotImplementedf("this deployment does not serve capability %q", r.Op)
	}
	// A capability reads and writes documents: limited per surface like
	// the other verbs that do work beyond the platform's own rows.
	if err := s.Limiter.Allow(ctx, c.Surface()); err != nil {
		return Result{}, err
	}
	out, err := s.Capabilities.Call(ctx, c.TaskID, r.Op, r.Payload)
	if err != nil {
		return Result{}, err
	}
	return Result{Kind: r.Op, Body: map[string]any{"result": out}, Result: out}, nil
}
