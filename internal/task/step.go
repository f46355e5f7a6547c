package task

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"time"

	"gorm.io/gorm"

	"github.com/appruntime/appruntime/internal/apperr"
	"github.com/appruntime/appruntime/internal/basetool"
	"github.com/appruntime/appruntime/internal/bundle"
	"github.com/appruntime/appruntime/internal/claim"
	"github.com/appruntime/appruntime/internal/feed"
	"github.com/appruntime/appruntime/internal/keydetail"
	"github.com/appruntime/appruntime/internal/outbox"
	"github.com/appruntime/appruntime/internal/review"
	"github.com/appruntime/appruntime/internal/schema"
	"github.com/appruntime/appruntime/internal/store"
	"github.com/appruntime/appruntime/jobs"
	"github.com/appruntime/appruntime/models"
)

// InjectedKeys are the app tool inputs the worker injects from context
// (basetool.AppToolInjected). A caller may never supply them in params.
var InjectedKeys = basetool.AppToolInjected

// StepInput is an app-tool step as the agent API takes it.
type StepInput struct {
	ConfiguredToolID string          `json:"configured_tool_id"`
	Params           json.RawMessage `json:"params,omitempty"`
}

// Artifact is an app-tool step's output: what the host needs to mount the
// bundle (the session mint adds the live settings and a session token).
type Artifact struct {
	StepID           string          `json:"step_id"`
	TaskID           string          `json:"task_id"`
	ConfiguredToolID string          `json:"configured_tool_id"`
	BundleID         string          `json:"bundle_id"`
	BundleVersion    int             `json:"bundle_version"`
	BundleSHA        string          `json:"bundle_sha"`
	BundleURL        string          `json:"bundle_url"`
	BindingID        string          `json:"binding_id"`
	Params           json.RawMessage `json:"params"`
	// AwaitID is set only when the tool has await_review: the task is parked on it.
	AwaitID string `json:"await_id,omitempty"`
	// ExtractedData holds the agent's key details, filled by the summary pass
	// after the artifact parked the task.
	ExtractedData json.RawMessage `json:"extracted_data,omitempty"`
}

// stepInputRecord is what an app-tool step records as its input: the
// caller's params plus the values the worker injects, taken from the
// configured tool and the agent row.
type stepInputRecord struct {
	Params              json.RawMessage        `json:"params"`
	ConfiguredToolID    string                 `json:"configured_tool_id"`
	KeyDefinitions      []keydetail.Definition `json:"key_definitions"`
	SummaryInstructions string                 `json:"summary_instructions"`
}

// SummaryPayload is the outbox payload of a summary pass.
type SummaryPayload struct {
	WorkspaceID string `json:"workspace_id"`
	TaskID      string `json:"task_id"`
	StepID      string `json:"step_id"`
	AgentID     string `json:"agent_id"`
	AwaitID     string `json:"await_id"`
}

// AddAppToolStep builds an artifact for an app-tool configured tool of the
// caller's agent on one of its running tasks. The step completes at once.
// When the tool has await_review, the same transaction registers the
// task_awaits row, parks the task (waiting_for_input) and, if the agent has
// key definitions or a summary template, queues the summary pass.
func (s *Service) AddAppToolStep(ctx context.Context, c Caller, taskID string, in StepInput) (StepView, error) {
	db := s.st.DB.WithContext(ctx)
	t, err := ownTask(ctx, db, c, taskID)
	if err != nil {
		return StepView{}, err
	}
	tool, err := appTool(ctx, db, c, in.ConfiguredToolID)
	if err != nil {
		return StepView{}, err
	}
	params, err := checkParams(tool, in.Params)
	if err != nil {
		return StepView{}, err
	}
	var agent models.Agent
	if err := db.Where("id = ?", c.AgentID).Take(&agent).Error; err != nil {
		return StepView{}, store.NotFound(err, "task: find agent", "agent")
	}
	defs, err := keydetail.Of(agent)
	if err != nil {
		return StepView{}, err
	}
	if tool.BundleID == nil || tool.BindingID == nil {
		return StepView{}, apperr.Conflictf("configured tool %q has no bundle or binding; fix it in the admin API", tool.DisplayName)
	}
	b, err := bundle.Resolve(ctx, db, c.WorkspaceID, *tool.BundleID, tool.BundleVersion)
	if err != nil {
		if apperr.Is(err, apperr.NotFound) {
			return StepView{}, apperr.Conflictf("configured tool %q names a bundle version that no longer exists; fix it in the admin API", tool.DisplayName)
		}
		return StepView{}, err
	}

	now := time.Now().UTC()
	status := models.StepCompleted
	if tool.ProducerToolID != nil {
		// Built while its producer seeds the rows: a mint answers 409
		// until the producer's job settles the step.
		status = models.StepRunning
	}
	step := models.Step{ID: models.NewID(), TaskID: t.ID, Kind: models.StepAppTool, ConfiguredToolID: &tool.ID,
		Status: status, CreatedAt: now, UpdatedAt: now}
	step.Input = models.MustJSON(stepInputRecord{Params: params, ConfiguredToolID: tool.ID,
		KeyDefinitions: defs, SummaryInstructions: agent.SummaryInstructions})
	art := Artifact{StepID: step.ID, TaskID: t.ID, ConfiguredToolID: tool.ID, BundleID: b.ID, BundleVersion: b.Version,
		BundleSHA: b.SHA256, BundleURL: bundle.URL(s.bundleBaseURL, b.ID, b.Version), BindingID: *tool.BindingID, Params: params}
	var await *models.TaskAwait
	if tool.AwaitReview {
		await = &models.TaskAwait{ID: models.NewID(), TaskID: t.ID, SourceType: models.AwaitSourceAppTool,
			CorrelationKey: step.ID, Status: models.AwaitPending, CreatedAt: now}
		art.AwaitID = await.ID
	}
	step.Output = models.MustJSON(art)

	queued := false // outbox rows written: the relay is nudged after commit
	err = s.st.Tx(ctx, func(tx *gorm.DB) error {
		if err := claimRunning(tx, t.ID, await != nil, now); err != nil {
			return err
		}
		if err := tx.Create(&step).Error; err != nil {
			return fmt.Errorf("task: create step: %w", err)
		}
		if await != nil {
			if err := tx.Create(await).Error; err != nil {
				return fmt.Errorf("task: create await: %w", err)
			}
			if err := claim.RouteToAgentPools(ctx, tx, t.ID, t.AgentID); err != nil {
				return err
			}
			if tool.AwaitExpirySeconds != nil && *tool.AwaitExpirySeconds > 0 {
				due := now.Add(time.Duration(*tool.AwaitExpirySeconds) * time.Second)
				if err := review.ScheduleAwaitExpiry(tx, c.WorkspaceID, await.ID, due); err != nil {
					return err
				}
			}
		}
		artifact := models.FeedEvent{TaskID: t.ID, StepID: &step.ID, Type: models.FeedArtifact, Name: tool.DisplayName,
			Payload: step.Output, Actor: c.Actor, CreatedAt: now}
		if err := feed.Insert(ctx, tx, false, artifact); err != nil {
			return fmt.Errorf("task: record artifact in feed: %w", err)
		}
		if tool.ProducerToolID != nil {
			job := jobs.ProducerJob{WorkspaceID: c.WorkspaceID, TaskID: t.ID, AgentID: c.AgentID, StepID: step.ID,
				ProducerToolID: *tool.ProducerToolID, Params: params}
			if _, err := outbox.Add(tx, outbox.KindProducer, job); err != nil {
				return err
			}
			queued = true
		}
		if await != nil && (len(defs) > 0 || agent.SummaryInstructions != "") {
			payload := SummaryPayload{WorkspaceID: c.WorkspaceID, TaskID: t.ID, StepID: step.ID, AgentID: agent.ID, AwaitID: await.ID}
			if _, err := outbox.Add(tx, outbox.KindSummary, payload); err != nil {
				return err
			}
			queued = true
		}
		return nil
	})
	if err != nil {
		return StepView{}, err
	}
	if queued && s.afterQueue != nil {
		s.afterQueue(ctx)
	}
	return stepView(step), nil
}

// claimRunning checks, with a conditional update that also locks the row
// until the transaction ends, that the task is running, and parks it when
// the step awaits review. Two steps racing on one task are thereby ordered,
// and a task parked by the first refuses the second.
func claimRunning(tx *gorm.DB, taskID string, park bool, now time.Time) error {
	status := models.TaskRunning
	if park {
		status = models.TaskWaitingForInput
	}
	res := tx.Model(&models.Task{}).Where("id = ? AND status = ?", taskID, models.TaskRunning).
		Updates(map[string]any{"status": status, "updated_at": now})
	if res.Error != nil {
		return fmt.Errorf("task: claim task: %w", res.Error)
	}
	if res.RowsAffected == 1 {
		return nil
	}
	var current models.Task
	if err := tx.Select("status").Where("id = ?", taskID).Take(&current).Error; err != nil {
		return store.NotFound(err, "task: reload task", "task")
	}
	return apperr.Conflictf("task is %s; a step can be added only to a running task", current.Status)
}

// appTool resolves the configured_tool_id of a step request: an app_tool
// configured tool of the caller's agent.
func appTool(ctx context.Context, db *gorm.DB, c Caller, id string) (models.ConfiguredTool, error) {
	var tool models.ConfiguredTool
	switch {
	case id == "":
		return tool, apperr.Invalidf("configured_tool_id is required")
	case !models.IsID(id):
		return tool, apperr.Invalidf("configured_tool_id must be a UUID, not %q (never pass a display name)", truncate(id, 80))
	}
	err := db.WithContext(ctx).Where("id = ? AND agent_id = ? AND workspace_id = ?", id, c.AgentID, c.WorkspaceID).Take(&tool).Error
	if err := store.NotFound(err, "task: find configured tool", "configured tool"); err != nil {
		return tool, err
	}
	if tool.BaseTool != models.BaseAppTool {
		return tool, apperr.NotFoundf("configured tool %s is a %s, not an app_tool", id, tool.BaseTool)
	}
	return tool, nil
}

// checkParams checks the caller's params (absent means {}): an object, none
// of the injected keys, valid against the tool's input schema.
func checkParams(tool models.ConfiguredTool, raw json.RawMessage) (json.RawMessage, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		raw = json.RawMessage(`{}`)
	}
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(raw, &obj); err != nil || obj == nil {
		return nil, apperr.Invalidf("params must be a JSON object")
	}
	for _, k := range InjectedKeys {
		if _, ok := obj[k]; ok {
			return nil, apperr.Invalidf("params may not contain %s: it is injected by the worker, never supplied by the caller", k)
		}
	}
	schemaDoc := json.RawMessage(tool.InputSchema)
	if len(schemaDoc) == 0 {
		schemaDoc = schema.DefaultInput
	}
	compiled, err := schema.Compile(schemaDoc, "input_schema")
	if err != nil {
		return nil, apperr.Wrap(err, apperr.Conflict, "configured tool %q has an input_schema that does not compile; fix it in the admin API", tool.DisplayName)
	}
	if err := schema.CheckParams(compiled, raw); err != nil {
		return nil, err
	}
	return raw, nil
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}
