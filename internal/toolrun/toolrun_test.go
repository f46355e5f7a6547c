package toolrun_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/appruntime/appruntime/internal/apperr"
	"github.com/appruntime/appruntime/internal/citation"
	"github.com/appruntime/appruntime/internal/store"
	"github.com/appruntime/appruntime/internal/testkit"
	"github.com/appruntime/appruntime/internal/tool"
	"github.com/appruntime/appruntime/internal/toolrun"
	"github.com/appruntime/appruntime/jobs"
	"github.com/appruntime/appruntime/models"
)

type fixture struct {
	st     *store.Store
	tenant testkit.Tenant
	taskID string
	stepID string
}

func newFixture(t *testing.T) fixture {
	st := testkit.Tx(t)
	f := fixture{st: st, tenant: testkit.NewTenant(t, st.DB)}
	task := models.Task{ID: models.NewID(), WorkspaceID: f.tenant.Workspace.ID, AgentID: f.tenant.Agent.ID, Status: models.TaskRunning}
	require.NoError(t, st.DB.Create(&task).Error)
	step := models.Step{ID: models.NewID(), TaskID: task.ID, Kind: models.StepAppTool, Status: models.StepCompleted}
	require.NoError(t, st.DB.Create(&step).Error)
	f.taskID, f.stepID = task.ID, step.ID
	return f
}

func (f fixture) job(base string, record bool) jobs.RunTool {
	return jobs.RunTool{TaskID: f.taskID, StepID: f.stepID, AgentID: f.tenant.Agent.ID, WorkspaceID: f.tenant.Workspace.ID,
		BaseTool: base, Op: "op", Input: json.RawMessage(`{}`), Record: record, Actor: "session:x"}
}

type counts struct{ steps, cards, usage int64 }

func (f fixture) counts(t *testing.T) counts {
	var c counts
	db := f.st.DB
	require.NoError(t, db.Model(&models.Step{}).Where("task_id = ? AND parent_step_id IS NOT NULL", f.taskID).Count(&c.steps).Error)
	require.NoError(t, db.Model(&models.FeedEvent{}).Where("task_id = ?", f.taskID).Count(&c.cards).Error)
	require.NoError(t, db.Model(&models.UsageRecord{}).Where("task_id = ?", f.taskID).Count(&c.usage).Error)
	return c
}

// TestRecordRules: a step when the op records or the run billed, a card
// when it records, usage when it billed; a failure the tool reports is
// recorded like a result, any other error records nothing.
func TestRecordRules(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name   string
		record bool
		units  int
		fail   error
		want   counts
		status string
	}{
		{"recorded, unbilled", true, 0, nil, counts{1, 1, 0}, "ok"},
		{"recorded, billed", true, 3, nil, counts{1, 1, 1}, "ok"},
		{"quiet, unbilled", false, 0, nil, counts{0, 0, 0}, "ok"},
		{"quiet, billed", false, 3, nil, counts{1, 0, 1}, "ok"},
		{"tool failure", true, 0, tool.Failf("CSV not indexed yet"), counts{1, 1, 0}, "error"},
		{"tool failure that billed", false, 2, &tool.Failure{Message: "bad schema", Units: 2}, counts{1, 0, 1}, "error"},
		{"refused", true, 3, apperr.Forbiddenf("no"), counts{}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			f := newFixture(t)
			r := &toolrun.Runner{Store: f.st, Tools: tool.Set{models.BaseTranslateText: tool.Func(func(context.Context, tool.Call) (tool.Result, error) {
				if tc.fail != nil {
					return tool.Result{}, tc.fail
				}
				return tool.Result{Output: json.RawMessage(`{"done":true}`), Units: tc.units}, nil
			})}}
			out, err := r.Run(context.Background(), models.NewID(), f.job(models.BaseTranslateText, tc.record))
			if tc.status == "" {
				require.Error(t, err)
			} else {
				require.NoError(t, err)
				var reply toolrun.Reply
				require.NoError(t, json.Unmarshal(out, &reply))
				require.Equal(t, tc.status, reply.Status)
			}
			require.Equal(t, tc.want, f.counts(t))
		})
	}
}

// TestNothingTwiceNothingHalf: the same run id recorded again inserts
// nothing; a run whose context ends before its records commit leaves none.
func TestNothingTwiceNothingHalf(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	billed := tool.Func(func(context.Context, tool.Call) (tool.Result, error) {
		return tool.Result{Output: json.RawMessage(`1`), Units: 1}, nil
	})
	r := &toolrun.Runner{Store: f.st, Tools: tool.Set{models.BaseTranslateText: billed}}
	id := models.NewID()
	_, err := r.Run(context.Background(), id, f.job(models.BaseTranslateText, true))
	require.NoError(t, err)
	_, err = r.Run(context.Background(), id, f.job(models.BaseTranslateText, true))
	require.Error(t, err, "a second run of the same job cannot record")
	require.Equal(t, counts{1, 1, 1}, f.counts(t))

	ctx, cancel := context.WithCancel(context.Background())
	r.Tools[models.BaseTranslateText] = tool.Func(func(context.Context, tool.Call) (tool.Result, error) {
		cancel() // the deadline passes as the tool returns
		return tool.Result{Output: json.RawMessage(`1`), Units: 1}, nil
	})
	_, err = r.Run(ctx, models.NewID(), f.job(models.BaseTranslateText, true))
	require.True(t, apperr.Is(err, apperr.Timeout), "%v", err)
	require.Equal(t, counts{1, 1, 1}, f.counts(t), "nothing of the cancelled run was written")
}

// TestARunsCitationsAreStoredOnTheTaskWithTheirIDsInTheResult: a tool
// result's citations are stored on the session's task and come back with
// their ids, in the run's transaction; malformed ones are the tool's
// reported error and store nothing.
func TestARunsCitationsAreStoredOnTheTaskWithTheirIDsInTheResult(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	output := `{"data":{"total":"42.00"},"citations":[{"file":"invoice.pdf","page":2,"quote":"Total 42.00","box":{"x":0.1,"y":0.2,"w":0.3,"h":0.04}},{"file":"invoice.pdf","page":1,"quote":"ACME"}]}`
	r := &toolrun.Runner{Store: f.st, Tools: tool.Set{models.BaseTranslateText: tool.Func(func(context.Context, tool.Call) (tool.Result, error) {
		return tool.Result{Output: json.RawMessage(output)}, nil
	})}}
	out, err := r.Run(context.Background(), models.NewID(), f.job(models.BaseTranslateText, false))
	require.NoError(t, err)
	var reply struct {
		Status string `json:"status"`
		Output struct {
			Data      map[string]string `json:"data"`
			Citations []struct {
				ID    int64  `json:"id"`
				File  string `json:"file"`
				Page  int    `json:"page"`
				Quote string `json:"quote"`
			} `json:"citations"`
		} `json:"output"`
	}
	require.NoError(t, json.Unmarshal(out, &reply))
	require.Equal(t, "ok", reply.Status)
	require.Equal(t, "42.00", reply.Output.Data["total"])
	require.Len(t, reply.Output.Citations, 2)
	stored, err := citation.List(context.Background(), f.st.DB, f.taskID, "")
	require.NoError(t, err)
	require.Len(t, stored, 2)
	require.Equal(t, stored[0].ID, reply.Output.Citations[0].ID)
	require.Equal(t, stored[1].ID, reply.Output.Citations[1].ID)
	require.Equal(t, "ACME", stored[1].Quote)
	require.Equal(t, counts{}, f.counts(t), "a quiet unbilled run records no step, only its citations")

	output = `{"citations":[{"file":"invoice.pdf","page":0,"quote":"x"}]}`
	out, err = r.Run(context.Background(), models.NewID(), f.job(models.BaseTranslateText, true))
	require.NoError(t, err)
	var failed toolrun.Reply
	require.NoError(t, json.Unmarshal(out, &failed))
	require.Equal(t, "error", failed.Status)
	require.Contains(t, *failed.Error, "citations[0]: page is a page number from 1")
	stored, err = citation.List(context.Background(), f.st.DB, f.taskID, "")
	require.NoError(t, err)
	require.Len(t, stored, 2, "malformed citations store nothing")
}
