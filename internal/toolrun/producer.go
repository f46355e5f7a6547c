package toolrun

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"gorm.io/gorm"

	"github.com/appruntime/appruntime/internal/apperr"
	"github.com/appruntime/appruntime/internal/basetool"
	"github.com/appruntime/appruntime/internal/feed"
	"github.com/appruntime/appruntime/internal/runtime"
	"github.com/appruntime/appruntime/internal/session"
	"github.com/appruntime/appruntime/internal/store"
	"github.com/appruntime/appruntime/internal/tool"
	"github.com/appruntime/appruntime/jobs"
	"github.com/appruntime/appruntime/models"
)

// Feed event types of a producer's outcome on its artifact step.
const (
	FeedArtifactReady  = "artifact_ready"
	FeedArtifactFailed = "artifact_failed"
)

// Seeder writes a producer's rows, its output's {"writes": [{"op", "row"}]},
// through the step's binding (StepSeeder).
type Seeder func(ctx context.Context, j jobs.ProducerJob, rows []runtime.SeedWrite) (int64, error)

// StepSeeder returns the Seeder of the producers' runs: it writes a
// producer's rows through its artifact step's binding (rt.Seed), scoped
// like a session on that step: the step's app tool, of the job's
// workspace, and the binding that tool names.
func StepSeeder(st *store.Store, rt *runtime.Service) Seeder {
	return func(ctx context.Context, j jobs.ProducerJob, rows []runtime.SeedWrite) (int64, error) {
		var step models.Step
		if err := st.DB.WithContext(ctx).Where("id = ?", j.StepID).Take(&step).Error; err != nil {
			return 0, store.NotFound(err, "toolrun: load producer step", "step "+j.StepID)
		}
		if step.ConfiguredToolID == nil {
			return 0, apperr.Invalidf("step %s has no app tool", j.StepID)
		}
		var appTool models.ConfiguredTool
		if err := st.DB.WithContext(ctx).Where("id = ? AND workspace_id = ?", *step.ConfiguredToolID, j.WorkspaceID).Take(&appTool).Error; err != nil {
			return 0, store.NotFound(err, "toolrun: load app tool", "app tool "+*step.ConfiguredToolID)
		}
		if appTool.BindingID == nil {
			return 0, apperr.Invalidf("app tool %q names no binding", appTool.DisplayName)
		}
		scope := session.Claims{WorkspaceID: j.WorkspaceID, TaskID: j.TaskID, AgentID: j.AgentID, StepID: j.StepID,
			ConfiguredToolID: appTool.ID, BindingID: *appTool.BindingID}
		return rt.Seed(ctx, scope, rows)
	}
}

// Produce runs producer job j (asynq retries it; last says this attempt is
// the final one). Success seeds its rows and completes the step with a
// "artifact_ready" card; a failure is returned for a retry, and on the last
// attempt, or when no retry can help (a refused row, a missing tool, a
// script that raised), fails the step with the error and an
// "artifact_failed" card. A step no longer running was settled by an
// earlier attempt: nothing is done twice.
func (r *Runner) Produce(ctx context.Context, j jobs.ProducerJob, seed Seeder, last bool) error {
	var step models.Step
	err := r.Store.DB.WithContext(ctx).Where("id = ? AND task_id = ?", j.StepID, j.TaskID).Take(&step).Error
	if errors.Is(err, gorm.ErrRecordNotFound) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("toolrun: load producer step: %w", err)
	}
	if step.Status != models.StepRunning {
		return nil
	}
	n, units, err := r.produce(ctx, j, seed)
	// Usage is what the settling attempt billed (python bills nothing
	// today); a failed attempt that is retried records nothing.
	if err == nil {
		return r.settle(ctx, j, models.StepCompleted, "", n, units)
	}
	if !last && retryable(err) {
		return err
	}
	// What the step shows is safe to show: a script's own message or a
	// refusal's; anything else is "internal error" (the worker logs it).
	_, _, msg := apperr.Public(err)
	if f, ok := tool.AsFailure(err); ok {
		msg = f.Message
	}
	if serr := r.settle(context.WithoutCancel(ctx), j, models.StepFailed, "producer failed: "+msg, 0, units); serr != nil {
		return errors.Join(err, serr)
	}
	return nil
}

// retryable: a tool's own failure or a refusal (bad output, a row the
// binding refuses) is the same on every attempt.
func retryable(err error) bool {
	if _, ok := tool.AsFailure(err); ok {
		return false
	}
	switch apperr.CodeOf(err) {
	case apperr.Invalid, apperr.Forbidden, apperr.NotFound, apperr.NotImplemented:
		return false
	}
	return true
}

func (r *Runner) produce(ctx context.Context, j jobs.ProducerJob, seed Seeder) (rows int64, units int, err error) {
	input := j.Params
	if len(input) == 0 || string(input) == "null" {
		input = json.RawMessage(`{}`)
	}
	call, err := r.resolve(ctx, jobs.RunTool{TaskID: j.TaskID, StepID: j.StepID, AgentID: j.AgentID, WorkspaceID: j.WorkspaceID,
		ConfiguredToolID: j.ProducerToolID, BaseTool: models.BasePythonCode, Input: input})
	if err != nil {
		return 0, 0, err
	}
	if call.Tool.BaseTool != models.BasePythonCode {
		return 0, 0, apperr.Invalidf("producer %q is not a python_code_tool", call.Tool.DisplayName)
	}
	res, err := r.Tools.Run(ctx, call)
	if err != nil {
		if f, ok := tool.AsFailure(err); ok {
			return 0, f.Units, err
		}
		return 0, 0, err
	}
	var out struct {
		Writes []runtime.SeedWrite `json:"writes"`
	}
	if err := json.Unmarshal(res.Output, &out); err != nil {
		return 0, res.Units, apperr.Invalidf(`producer output must be {"writes": [{"op": …, "row": {…}}]}: %v`, err)
	}
	rows, err = seed(ctx, j, out.Writes)
	return rows, res.Units, err
}

// settle moves the step out of running and records, once: the outcome
// card, the producer's own app_tool_run step (a child of the artifact
// step) and its usage when it billed.
func (r *Runner) settle(ctx context.Context, j jobs.ProducerJob, status, errText string, rows int64, units int) error {
	return r.Store.DB.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		res := tx.Model(&models.Step{}).Where("id = ? AND status = ?", j.StepID, models.StepRunning).
			Updates(map[string]any{"status": status, "error": errText})
		if res.Error != nil {
			return fmt.Errorf("toolrun: settle producer step: %w", res.Error)
		}
		if res.RowsAffected == 0 {
			return nil
		}
		// The seeding journal (runtime.Service.Seed) served the retries;
		// the settled step needs it no more.
		if err := tx.Where("step_id = ?", j.StepID).Delete(&models.ProducerSeed{}).Error; err != nil {
			return fmt.Errorf("toolrun: drop seed journal: %w", err)
		}
		typ, payload := FeedArtifactReady, map[string]any{"status": status, "rows_seeded": rows}
		if status == models.StepFailed {
			typ, payload = FeedArtifactFailed, map[string]any{"status": status, "error": errText}
		}
		parent, toolID := j.StepID, j.ProducerToolID
		run := models.Step{ID: models.NewID(), TaskID: j.TaskID, ParentStepID: &parent, Kind: models.StepAppToolRun,
			ConfiguredToolID: &toolID, Status: status, Input: models.JSON(j.Params), Output: models.MustJSON(payload), Error: errText}
		if len(run.Input) == 0 {
			run.Input = models.JSON(`{}`)
		}
		if err := tx.Create(&run).Error; err != nil {
			return fmt.Errorf("toolrun: record producer step: %w", err)
		}
		if units > 0 {
			u := models.UsageRecord{ID: models.NewID(), TaskID: j.TaskID, StepID: run.ID, Tool: models.BasePythonCode,
				Units: float64(units), Rate: basetool.RateOf(models.BasePythonCode)}
			if err := tx.Create(&u).Error; err != nil {
				return fmt.Errorf("toolrun: record producer usage: %w", err)
			}
		}
		card := models.FeedEvent{TaskID: j.TaskID, StepID: &j.StepID, Type: typ, Name: "producer", Actor: "system",
			Payload: models.MustJSON(payload)}
		return feed.Insert(ctx, tx, false, card)
	})
}

// ProduceOutbox runs the producer job carried by outbox row outboxID (the
// script queue's run_producer job). A row that no longer exists is done.
func (r *Runner) ProduceOutbox(ctx context.Context, outboxID string, seed Seeder, last bool) error {
	var row models.Outbox
	err := r.Store.DB.WithContext(ctx).Where("id = ?", outboxID).Take(&row).Error
	if errors.Is(err, gorm.ErrRecordNotFound) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("toolrun: load producer job: %w", err)
	}
	var j jobs.ProducerJob
	if err := row.Payload.Decode(&j); err != nil {
		return fmt.Errorf("toolrun: decode producer job %s: %w", outboxID, err)
	}
	return r.Produce(ctx, j, seed, last)
}
