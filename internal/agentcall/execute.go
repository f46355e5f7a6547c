package agentcall

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"gorm.io/gorm"

	"github.com/appruntime/appruntime/internal/agenttool"
	"github.com/appruntime/appruntime/internal/apperr"
	"github.com/appruntime/appruntime/internal/jobwait"
	"github.com/appruntime/appruntime/internal/store"
	"github.com/appruntime/appruntime/jobs"
	"github.com/appruntime/appruntime/models"
)

// Outcome is what running a target gave: its parsed reply and, for an app
// target, the component that answered (a card's buttons may target it).
type Outcome struct {
	Reply    agenttool.Reply `json:"reply"`
	Producer string          `json:"producer,omitempty"`
}

// run runs job's target and waits for its outcome: on the lookup queue
// through jobwait when the service has a waiter (the API), with the
// deadline as the job's absolute deadline (504 past it); in this process
// within the same deadline otherwise. On the queue it takes a slot of
// workspace's share, waiting for one rather than failing the call.
func (s *Service) run(ctx context.Context, workspace string, job jobs.AgentToolCall) (Outcome, error) {
	deadline := time.Now().Add(s.deadline)
	if s.jobs == nil {
		ctx, cancel := context.WithDeadline(ctx, deadline)
		defer cancel()
		out, err := s.Execute(ctx, job)
		if err != nil && ctx.Err() == context.DeadlineExceeded {
			return out, apperr.Wrap(err, apperr.Timeout, "the tool did not finish within %s", s.deadline)
		}
		return out, err
	}
	raw, err := s.jobs.Do(ctx, jobwait.Job{Args: job, Queue: s.queue, Deadline: deadline, Workspace: workspace, WaitForShare: true})
	if err != nil {
		return Outcome{}, err
	}
	var out Outcome
	if err := json.Unmarshal(raw, &out); err != nil {
		return Outcome{}, fmt.Errorf("agentcall: decode outcome: %w", err)
	}
	return out, nil
}

// Execute runs the target of a tool call (or of the button job names) and
// returns its outcome; the worker's handler of jobs.AgentToolCall. ctx
// bounds it (the job's deadline). It records nothing: the caller that
// waits records the outcome, so a job run twice changes nothing.
func (s *Service) Execute(ctx context.Context, job jobs.AgentToolCall) (Outcome, error) {
	db := s.st.DB.WithContext(ctx)
	var call models.ToolCall
	if !models.IsID(job.ToolCallID) {
		return Outcome{}, apperr.Invalidf("tool call id %q is not a UUID", job.ToolCallID)
	}
	if err := store.NotFound(db.Where("id = ?", job.ToolCallID).Take(&call).Error, "agentcall: find tool call", "tool call"); err != nil {
		return Outcome{}, err
	}
	var t models.Task
	if err := store.NotFound(db.Where("id = ?", call.TaskID).Take(&t).Error, "agentcall: find task", "task"); err != nil {
		return Outcome{}, err
	}
	var agent models.Agent
	if err := store.NotFound(db.Where("id = ?", t.AgentID).Take(&agent).Error, "agentcall: find agent", "agent"); err != nil {
		return Outcome{}, err
	}
	identity := agenttool.IdentityClaims{WorkspaceID: t.WorkspaceID, AgentID: t.AgentID, TaskID: t.ID,
		ToolCallID: call.ID, Tool: call.Name, UserID: job.UserID}
	target, input, err := s.targetOf(ctx, call, job.ButtonID)
	if err != nil {
		return Outcome{}, err
	}
	return s.dispatch(ctx, target, input, identity, agent)
}

// targetOf is what job runs: the declaration's target with the call's
// input, or a card button's target with the button's input.
func (s *Service) targetOf(ctx context.Context, call models.ToolCall, buttonID string) (agenttool.Target, json.RawMessage, error) {
	if buttonID != "" {
		var card agenttool.PendingInput
		if err := json.Unmarshal(call.Card, &card); err != nil {
			return agenttool.Target{}, nil, fmt.Errorf("agentcall: stored card of %s: %w", call.ID, err)
		}
		run, err := card.Click(buttonID)
		if err != nil {
			return agenttool.Target{}, nil, err
		}
		if run.Target == nil {
			return agenttool.Target{}, nil, apperr.Invalidf("button %q has no target", buttonID)
		}
		return *run.Target, run.Button.Input, nil
	}
	if call.DeclarationID == nil {
		return agenttool.Target{}, nil, apperr.Conflictf("the tool %q was deleted", call.Name)
	}
	var row models.AgentToolDeclaration
	err := s.st.DB.WithContext(ctx).Where("id = ?", *call.DeclarationID).Take(&row).Error
	if errors.Is(err, gorm.ErrRecordNotFound) {
		return agenttool.Target{}, nil, apperr.Conflictf("the tool %q was deleted", call.Name)
	}
	if err != nil {
		return agenttool.Target{}, nil, fmt.Errorf("agentcall: find declaration: %w", err)
	}
	decl, err := decode(row)
	if err != nil {
		return agenttool.Target{}, nil, err
	}
	return decl.Target, json.RawMessage(call.Input), nil
}

// dispatch runs a target now, within ctx.
func (s *Service) dispatch(ctx context.Context, target agenttool.Target, input json.RawMessage, id agenttool.IdentityClaims, agent models.Agent) (Outcome, error) {
	call := agenttool.Call{Target: target, Input: input, Identity: id, Agent: agent, Check: s.checkOptions(id.WorkspaceID)}
	out := Outcome{}
	if target.Type == agenttool.TargetApp {
		if s.components == nil {
			return out, apperr.NotImplementedf("app targets are not available on this deployment")
		}
		comp, err := s.components.Component(ctx, id.WorkspaceID, target.Component)
		if apperr.Is(err, apperr.NotFound) {
			return out, apperr.Conflictf("the tool's component no longer exists; fix the tool in the admin API")
		}
		if err != nil {
			return out, err
		}
		call.Component, out.Producer = &comp, comp.ID
	}
	if s.dispatcher == nil {
		return out, apperr.NotImplementedf("agent tools cannot run on this deployment")
	}
	var err error
	out.Reply, err = s.dispatcher.Dispatch(ctx, call)
	return out, err
}
