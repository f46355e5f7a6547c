package agentcall_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/appruntime/appruntime/internal/agentcall"
	"github.com/appruntime/appruntime/internal/agenttool"
	"github.com/appruntime/appruntime/internal/store"
	"github.com/appruntime/appruntime/internal/task"
	"github.com/appruntime/appruntime/internal/testkit"
	"github.com/appruntime/appruntime/models"
)

// TestACallCutOffIsFailedOnce: a call an api process left running when it
// stopped (recorded running, no outcome) is failed by the sweep once it is
// past its deadline and the grace: the call and its step failed, one
// tool_call feed row by the system. A second pass, or another worker's,
// changes nothing, and a call still within its time is left alone.
func TestACallCutOffIsFailedOnce(t *testing.T) {
	t.Parallel()
	testkit.EachDialect(t, func(t *testing.T, st *store.Store) {
		ctx := context.Background()
		tn := testkit.NewTenant(t, st.DB)
		svc := agentcall.NewService(agentcall.Options{Store: st, Log: quiet, Deadline: time.Second,
			Dispatcher: agenttool.NewDispatcher(agenttool.DispatcherOptions{Allow: testkit.Loopback, Log: quiet})})
		decl, err := svc.CreateDeclaration(ctx, tn.Workspace.ID, tn.Agent.ID, "test", []byte(`{"name": "echo", "displayName": "Echo",
			"description": "Echoes.", "input": {"type": "object"},
			"target": {"type": "url", "url": "http://127.0.0.1:1/echo", "method": "POST", "body": "${input}"}}`))
		require.NoError(t, err)
		caller := task.Caller{WorkspaceID: tn.Workspace.ID, AgentID: tn.Agent.ID, Actor: "agent:" + tn.Agent.ID}
		tk, err := task.NewService(task.Options{Store: st, Log: quiet}).Create(ctx, caller, task.TaskInput{Title: "t"})
		require.NoError(t, err)

		// What Call records before it dispatches, as a killed process
		// leaves it: one call long past its time, one just started.
		cut := func(age time.Duration) models.ToolCall {
			at := time.Now().UTC().Add(-age)
			step := models.Step{ID: models.NewID(), TaskID: tk.ID, Kind: models.StepAgentTool, Status: models.StepRunning,
				Input: models.JSON(`{"name":"echo","input":{}}`), CreatedAt: at, UpdatedAt: at}
			call := models.ToolCall{ID: models.NewID(), TaskID: tk.ID, StepID: step.ID, AgentID: tn.Agent.ID, DeclarationID: &decl.ID,
				Name: "echo", Input: models.JSON(`{}`), Status: models.ToolCallRunning, CreatedAt: at, UpdatedAt: at}
			require.NoError(t, st.DB.Create(&step).Error)
			require.NoError(t, st.DB.Create(&call).Error)
			return call
		}
		old := cut(time.Second + agentcall.CutCallGrace + time.Second)
		young := cut(time.Second)

		n, err := svc.FailCutCalls(ctx, time.Now())
		require.NoError(t, err)
		require.Equal(t, 1, n)
		n, err = svc.FailCutCalls(ctx, time.Now())
		require.NoError(t, err)
		require.Zero(t, n, "a second pass fails nothing")

		calls, err := svc.ListCalls(ctx, tk.ID)
		require.NoError(t, err)
		status := map[string]string{}
		for _, c := range calls {
			status[c.ID] = c.Status
			if c.ID == old.ID {
				require.Contains(t, c.Error, "cut off")
			}
		}
		require.Equal(t, models.ToolCallFailed, status[old.ID])
		require.Equal(t, models.ToolCallRunning, status[young.ID], "a call within its time is left alone")
		var step models.Step
		require.NoError(t, st.DB.Where("id = ?", old.StepID).Take(&step).Error)
		require.Equal(t, models.StepFailed, step.Status)
		var events []models.FeedEvent
		require.NoError(t, st.DB.Where("task_id = ? AND type = ?", tk.ID, models.FeedToolCall).Find(&events).Error)
		require.Len(t, events, 1, "one tool_call feed row")
		require.Equal(t, "system", events[0].Actor)
		require.Equal(t, old.StepID, *events[0].StepID)
	})
}
