package task_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/appruntime/appruntime/internal/task"
	"github.com/appruntime/appruntime/internal/testkit"
	"github.com/appruntime/appruntime/models"
)

// TestReprioritiseFollowsTheNewPriorityField: an agent's unfinished tasks
// take the value of the new field's key detail (a number or a numeric
// string), 0 without one or without a field; finished tasks and other
// agents' tasks keep theirs.
func TestReprioritiseFollowsTheNewPriorityField(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st := testkit.Tx(t)
	tn := testkit.NewTenant(t, st.DB)
	other := models.Agent{ID: models.NewID(), WorkspaceID: tn.Workspace.ID, Name: "other"}
	require.NoError(t, st.DB.Create(&other).Error)
	now := time.Now().UTC()
	newTask := func(agentID, status string, priority float64, values map[string]string) string {
		tk := models.Task{ID: models.NewID(), WorkspaceID: tn.Workspace.ID, AgentID: agentID, Status: status, Priority: priority, CreatedAt: now, UpdatedAt: now}
		require.NoError(t, st.DB.Create(&tk).Error)
		for k, v := range values {
			require.NoError(t, st.DB.Create(&models.AgentKeyValue{ID: models.NewID(), TaskID: tk.ID, AgentID: agentID, Key: k,
				Value: models.JSON(v), CreatedAt: now, UpdatedAt: now}).Error)
		}
		return tk.ID
	}
	parked := newTask(tn.Agent.ID, models.TaskWaitingForInput, 7, map[string]string{"amount": `7`, "urgency": `"12.5"`})
	running := newTask(tn.Agent.ID, models.TaskRunning, 3, map[string]string{"urgency": `4`})
	without := newTask(tn.Agent.ID, models.TaskWaitingForInput, 9, map[string]string{"amount": `9`})
	notANumber := newTask(tn.Agent.ID, models.TaskWaitingForInput, 2, map[string]string{"urgency": `"high"`})
	done := newTask(tn.Agent.ID, models.TaskCompleted, 5, map[string]string{"urgency": `50`})
	theirs := newTask(other.ID, models.TaskWaitingForInput, 6, map[string]string{"urgency": `60`})

	priority := func(id string) float64 {
		var tk models.Task
		require.NoError(t, st.DB.Where("id = ?", id).Take(&tk).Error)
		return tk.Priority
	}
	require.NoError(t, task.Reprioritise(ctx, st.DB, tn.Agent.ID, "urgency"))
	for id, want := range map[string]float64{parked: 12.5, running: 4, without: 0, notANumber: 0, done: 5, theirs: 6} {
		require.Equal(t, want, priority(id), id)
	}
	require.NoError(t, task.Reprioritise(ctx, st.DB, tn.Agent.ID, ""))
	for id, want := range map[string]float64{parked: 0, running: 0, done: 5, theirs: 6} {
		require.Equal(t, want, priority(id), id)
	}
}
