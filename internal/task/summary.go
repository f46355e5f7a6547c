package task

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"gorm.io/gorm"
	"gorm.io/gorm/clause"

	"github.com/appruntime/appruntime/internal/keydetail"
	"github.com/appruntime/appruntime/internal/llm"
	"github.com/appruntime/appruntime/internal/outbox"
	"github.com/appruntime/appruntime/models"
)

// SummaryKey is the key detail under which the summary written from an
// agent's summary template is stored.
const SummaryKey = "summary"

// Deps are what the summary pass needs.
type Deps struct {
	DB  *gorm.DB
	LLM *llm.Client // nil: no LLM configured, the pass is skipped
	Log *slog.Logger
}

// errSkipped ends a summary pass that has nothing to do; it is logged at info.
var errSkipped = errors.New("skipped")

// Summarize runs the key-detail summary pass of the summary outbox row
// outboxID (seed 000, "Key details are filled at the pause"): one LLM call
// fills the agent's key definitions (and the summary, when the agent has a
// template) from the task and the artifact, persists each value to
// agent_key_values and sets extracted_data on the artifact.
//
// It is best-effort: a failure is logged and Summarize returns nil, so the
// step stays completed and the task stays parked. It is idempotent: an
// artifact that already carries extracted_data is left alone.
func Summarize(ctx context.Context, d Deps, outboxID string) error {
	log := d.Log.With("outbox_id", outboxID)
	err := summarize(ctx, d, log, outboxID)
	switch {
	case err == nil:
	case errors.Is(err, errSkipped):
		log.InfoContext(ctx, "summary pass skipped", "reason", strings.TrimSuffix(err.Error(), ": "+errSkipped.Error()))
	default:
		log.WarnContext(ctx, "summary pass failed; the artifact is returned intact and the task stays parked", "error", err.Error())
	}
	return nil
}

func summarize(ctx context.Context, d Deps, log *slog.Logger, outboxID string) error {
	db := d.DB.WithContext(ctx)
	var row models.Outbox
	if err := db.Where("id = ? AND kind = ?", outboxID, outbox.KindSummary).Take(&row).Error; err != nil {
		return fmt.Errorf("load outbox row: %w", err)
	}
	var p SummaryPayload
	if err := row.Payload.Decode(&p); err != nil {
		return fmt.Errorf("decode payload: %w", err)
	}
	var step models.Step
	if err := db.Where("id = ? AND task_id = ?", p.StepID, p.TaskID).Take(&step).Error; err != nil {
		return fmt.Errorf("load step %s: %w", p.StepID, err)
	}
	var art map[string]json.RawMessage
	if err := step.Output.Decode(&art); err != nil {
		return fmt.Errorf("decode artifact of step %s: %w", step.ID, err)
	}
	if _, done := art["extracted_data"]; done {
		return fmt.Errorf("step %s already has extracted_data: %w", step.ID, errSkipped)
	}
	var agent models.Agent
	if err := db.Where("id = ?", p.AgentID).Take(&agent).Error; err != nil {
		return fmt.Errorf("load agent %s: %w", p.AgentID, err)
	}
	defs, err := keydetail.Of(agent)
	if err != nil {
		return err
	}
	if len(defs) == 0 && agent.SummaryInstructions == "" {
		return fmt.Errorf("agent has neither key definitions nor a summary template: %w", errSkipped)
	}
	if d.LLM == nil {
		return fmt.Errorf("no LLM is configured (LLM_BASE_URL): %w", errSkipped)
	}
	var t models.Task
	if err := db.Where("id = ?", p.TaskID).Take(&t).Error; err != nil {
		return fmt.Errorf("load task %s: %w", p.TaskID, err)
	}
	fileNames := []string{}
	if err := db.Model(&models.File{}).Where("task_id = ?", t.ID).Order("created_at").Pluck("name", &fileNames).Error; err != nil {
		return fmt.Errorf("list files: %w", err)
	}

	reply, err := d.LLM.CompleteJSON(ctx, summaryPrompt(defs, agent.SummaryInstructions, t, art["params"], fileNames))
	if err != nil {
		return err
	}
	var answer map[string]json.RawMessage
	if err := json.Unmarshal(reply, &answer); err != nil {
		return fmt.Errorf("decode LLM reply: %w", err)
	}
	values := map[string]json.RawMessage{}
	for _, k := range wantedKeys(defs, agent.SummaryInstructions) {
		if v, ok := answer[k]; ok {
			values[k] = v
		}
	}
	art["extracted_data"] = json.RawMessage(models.MustJSON(values))
	now := time.Now().UTC()
	err = d.DB.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		for k, v := range values {
			kv := models.AgentKeyValue{ID: models.NewID(), TaskID: t.ID, AgentID: agent.ID, Key: k, Value: models.JSON(v), CreatedAt: now, UpdatedAt: now}
			err := tx.Clauses(clause.OnConflict{
				Columns:   []clause.Column{{Name: "task_id"}, {Name: "key"}},
				DoUpdates: clause.AssignmentColumns([]string{"value", "updated_at"}),
			}).Create(&kv).Error
			if err != nil {
				return fmt.Errorf("save key value %s: %w", k, err)
			}
		}
		if p, ok := priorityValue(values[agent.PriorityField]); ok && agent.PriorityField != "" {
			// The review queue orders parked tasks by this column (an index
			// serves it), so the key detail is copied onto the task.
			if err := tx.Model(&models.Task{}).Where("id = ?", t.ID).Update("priority", p).Error; err != nil {
				return fmt.Errorf("save priority: %w", err)
			}
		}
		return tx.Model(&models.Step{}).Where("id = ?", step.ID).
			Updates(map[string]any{"output": models.MustJSON(art), "updated_at": now}).Error
	})
	if err != nil {
		return fmt.Errorf("persist key values: %w", err)
	}
	log.InfoContext(ctx, "summary pass filled key details", "task_id", t.ID, "step_id", step.ID, "keys", len(values))
	return nil
}

// wantedKeys are the keys the pass asks for: every defined key, and the
// summary when the agent has a template.
func wantedKeys(defs []keydetail.Definition, instructions string) []string {
	keys := make([]string, 0, len(defs)+1)
	for _, d := range defs {
		keys = append(keys, d.Key)
	}
	if instructions != "" && !slices.Contains(keys, SummaryKey) {
		keys = append(keys, SummaryKey)
	}
	return keys
}

// summaryPrompt builds the messages of one summary pass.
func summaryPrompt(defs []keydetail.Definition, instructions string, t models.Task, params json.RawMessage, files []string) []llm.Message {
	var sys strings.Builder
	sys.WriteString("You fill in the key details of a task so that a review queue can order and filter it. ")
	sys.WriteString("Reply with one JSON object whose keys are exactly: ")
	sys.WriteString(strings.Join(wantedKeys(defs, instructions), ", "))
	sys.WriteString(". Use null for a value the task does not give.\n")
	if len(defs) > 0 {
		sys.WriteString("\nKey details:\n")
		for _, d := range defs {
			typ := d.Type
			if typ == "" {
				typ = "string"
			}
			fmt.Fprintf(&sys, "- %s (%s): %s\n", d.Key, typ, d.Description)
		}
	}
	if instructions != "" {
		fmt.Fprintf(&sys, "\nWrite %q following these instructions:\n%s\n", SummaryKey, instructions)
	}
	ctxDoc := map[string]any{"title": t.Title, "priority": t.Priority, "artifact_params": params, "files": files}
	user, _ := json.Marshal(ctxDoc)
	return []llm.Message{
		{Role: "system", Content: sys.String()},
		{Role: "user", Content: "The task, as JSON:\n" + string(user)},
	}
}

// priorityValue reads a priority key detail: a JSON number, or a string
// holding one ("1200.50"). Anything else has no priority.
func priorityValue(raw json.RawMessage) (float64, bool) {
	var v any
	if len(raw) == 0 || json.Unmarshal(raw, &v) != nil {
		return 0, false
	}
	switch x := v.(type) {
	case float64:
		return x, true
	case string:
		f, err := strconv.ParseFloat(strings.TrimSpace(x), 64)
		if err != nil || math.IsInf(f, 0) || math.IsNaN(f) {
			return 0, false
		}
		return f, true
	}
	return 0, false
}
