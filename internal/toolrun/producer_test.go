package toolrun_test

import (
	"context"
	"encoding/json"
	"errors"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/appruntime/appruntime/internal/apperr"
	"github.com/appruntime/appruntime/internal/runtime"
	"github.com/appruntime/appruntime/internal/testkit"
	"github.com/appruntime/appruntime/internal/tool"
	"github.com/appruntime/appruntime/internal/toolrun"
	"github.com/appruntime/appruntime/jobs"
	"github.com/appruntime/appruntime/models"
)

// TestProduce: a producer's output rows are seeded and the step completes
// with an artifact_ready card; a transient failure is retried (the step
// stays running) until the last attempt fails the step with its error; a
// script that raised or a refused row fails it at once; a settled step is
// never settled twice.
func TestProduce(t *testing.T) {
	t.Parallel()
	transient := errors.New("redis: connection reset")
	for _, tc := range []struct {
		name    string
		out     string
		toolErr error
		seedErr error
		last    bool
		wantErr bool
		status  string
		card    string
		errText string
	}{
		{"seeds and completes", `{"writes":[{"op":"add_line","row":{"id":1}},{"op":"add_line","row":{"id":2}}]}`, nil, nil, false, false,
			models.StepCompleted, toolrun.FeedArtifactReady, ""},
		{"transient failure, retried", "", transient, nil, false, true, models.StepRunning, "", ""},
		{"transient failure, last attempt", "", transient, nil, true, false, models.StepFailed, toolrun.FeedArtifactFailed,
			"producer failed: internal error"},
		{"script raised", "", tool.Failf("ValueError: bad report"), nil, false, false, models.StepFailed, toolrun.FeedArtifactFailed,
			"producer failed: ValueError: bad report"},
		{"row refused by the binding", `{"writes":[{"op":"drop","row":{}}]}`, nil, apperr.Forbiddenf(`writes[0]: "drop" is not a write op of the binding`),
			false, false, models.StepFailed, toolrun.FeedArtifactFailed, `producer failed: writes[0]: "drop" is not a write op of the binding`},
		{"output of the wrong shape", `[1,2]`, nil, nil, false, false, models.StepFailed, toolrun.FeedArtifactFailed, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			f := newFixture(t)
			db := f.st.DB
			require.NoError(t, db.Model(&models.Step{}).Where("id = ?", f.stepID).Update("status", models.StepRunning).Error)
			producer := models.ConfiguredTool{ID: models.NewID(), WorkspaceID: f.tenant.Workspace.ID, AgentID: f.tenant.Agent.ID,
				DisplayName: "seed lines", BaseTool: models.BasePythonCode}
			require.NoError(t, db.Create(&producer).Error)
			var gotInput json.RawMessage
			r := &toolrun.Runner{Store: f.st, Tools: tool.Set{models.BasePythonCode: tool.Func(func(_ context.Context, c tool.Call) (tool.Result, error) {
				gotInput = c.Input
				require.Equal(t, producer.ID, c.Tool.ID)
				return tool.Result{Output: json.RawMessage(tc.out)}, tc.toolErr
			})}}
			var seeded []runtime.SeedWrite
			seed := func(_ context.Context, _ jobs.ProducerJob, rows []runtime.SeedWrite) (int64, error) {
				if tc.seedErr != nil {
					return 0, tc.seedErr
				}
				seeded = rows
				return int64(len(rows)), nil
			}
			j := jobs.ProducerJob{WorkspaceID: f.tenant.Workspace.ID, TaskID: f.taskID, AgentID: f.tenant.Agent.ID, StepID: f.stepID,
				ProducerToolID: producer.ID, Params: json.RawMessage(`{"report_id":7}`)}
			err := r.Produce(context.Background(), j, seed, tc.last)
			if tc.wantErr {
				require.Error(t, err)
			} else {
				require.NoError(t, err)
			}
			require.JSONEq(t, `{"report_id":7}`, string(gotInput), "the step's params are the producer's input")
			var step models.Step
			require.NoError(t, db.Where("id = ?", f.stepID).Take(&step).Error)
			require.Equal(t, tc.status, step.Status)
			if tc.errText != "" {
				require.Equal(t, tc.errText, step.Error)
			}
			var cards []models.FeedEvent
			require.NoError(t, db.Where("task_id = ?", f.taskID).Find(&cards).Error)
			if tc.card == "" {
				require.Empty(t, cards)
				return
			}
			require.Len(t, cards, 1)
			require.Equal(t, tc.card, cards[0].Type)
			var runs []models.Step
			require.NoError(t, db.Where("parent_step_id = ?", f.stepID).Find(&runs).Error)
			require.Len(t, runs, 1, "the producer's run is one app_tool_run step under the artifact step")
			require.Equal(t, models.StepAppToolRun, runs[0].Kind)
			require.Equal(t, tc.status, runs[0].Status)
			require.Equal(t, producer.ID, *runs[0].ConfiguredToolID)
			if tc.status == models.StepCompleted {
				require.Len(t, seeded, 2)
				require.Equal(t, "add_line", seeded[1].Op)
			}

			// A second delivery of the same job finds the step settled.
			require.NoError(t, r.Produce(context.Background(), j, seed, true))
			var n int64
			require.NoError(t, db.Model(&models.FeedEvent{}).Where("task_id = ?", f.taskID).Count(&n).Error)
			require.Equal(t, int64(1), n)
			require.NoError(t, db.Model(&models.Step{}).Where("parent_step_id = ?", f.stepID).Count(&n).Error)
			require.Equal(t, int64(1), n)
		})
	}
}

// TestStepSeederRefusals: a producer's rows are written only through the
// binding of its own step's app tool in the job's workspace; a step that
// is gone or of another workspace's tool is 404, a step without an app
// tool, or one whose tool names no binding, is invalid, and nothing
// reaches the runtime (nil here: reaching it would panic).
func TestStepSeederRefusals(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	db := f.st.DB
	seed := toolrun.StepSeeder(f.st, nil)
	job := jobs.ProducerJob{WorkspaceID: f.tenant.Workspace.ID, TaskID: f.taskID, AgentID: f.tenant.Agent.ID, StepID: f.stepID}
	rows := []runtime.SeedWrite{{Op: "add_line", Row: map[string]any{"id": 1}}}
	setTool := func(id string) {
		require.NoError(t, db.Model(&models.Step{}).Where("id = ?", f.stepID).Update("configured_tool_id", id).Error)
	}
	other := testkit.NewTenant(t, db)
	foreign := models.ConfiguredTool{ID: models.NewID(), WorkspaceID: other.Workspace.ID, AgentID: other.Agent.ID,
		DisplayName: "theirs", BaseTool: models.BaseAppTool}
	unbound := models.ConfiguredTool{ID: models.NewID(), WorkspaceID: f.tenant.Workspace.ID, AgentID: f.tenant.Agent.ID,
		DisplayName: "unbound", BaseTool: models.BaseAppTool}
	require.NoError(t, db.Create(&foreign).Error)
	require.NoError(t, db.Create(&unbound).Error)

	gone := job
	gone.StepID = models.NewID()
	_, err := seed(context.Background(), gone, rows)
	require.Equal(t, apperr.NotFound, apperr.CodeOf(err), "%v", err)

	_, err = seed(context.Background(), job, rows)
	require.Equal(t, apperr.Invalid, apperr.CodeOf(err), "%v", err)
	require.ErrorContains(t, err, "has no app tool")

	setTool(foreign.ID)
	_, err = seed(context.Background(), job, rows)
	require.Equal(t, apperr.NotFound, apperr.CodeOf(err), "another workspace's app tool: %v", err)

	setTool(unbound.ID)
	_, err = seed(context.Background(), job, rows)
	require.Equal(t, apperr.Invalid, apperr.CodeOf(err), "%v", err)
	require.ErrorContains(t, err, `app tool "unbound" names no binding`)
}
