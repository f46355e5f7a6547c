package reply_test

import (
	"context"
	"errors"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/appruntime/appruntime/internal/apperr"
	"github.com/appruntime/appruntime/internal/reply"
	"github.com/appruntime/appruntime/internal/storage"
	"github.com/appruntime/appruntime/internal/task"
	"github.com/appruntime/appruntime/internal/testkit"
	"github.com/appruntime/appruntime/models"
)

// TestPostSettlesTheTask: a final reply completes a running task; a partial
// one leaves it running; any reply leaves a parked task parked (the await
// decides); a task that is over takes no reply and nothing of it is kept.
func TestPostSettlesTheTask(t *testing.T) {
	t.Parallel()
	const (
		final   = `{"final": true, "blocks": [{"type": "text", "text": "Done."}]}`
		partial = `{"final": false, "blocks": [{"type": "text", "text": "Working on it."}]}`
	)
	for _, tc := range []struct {
		name, status, body string
		want               string // the task's status after; "" for a 409
	}{
		{"final on running", models.TaskRunning, final, models.TaskCompleted},
		{"partial on running", models.TaskRunning, partial, models.TaskRunning},
		{"final on parked", models.TaskWaitingForInput, final, models.TaskWaitingForInput},
		{"partial on parked", models.TaskWaitingForInput, partial, models.TaskWaitingForInput},
		{"final on completed", models.TaskCompleted, final, ""},
		{"partial on completed", models.TaskCompleted, partial, ""},
		{"final on failed", models.TaskFailed, final, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			st := testkit.Tx(t)
			blobs, err := storage.NewDir(t.TempDir())
			require.NoError(t, err)
			svc := reply.NewService(st, blobs)
			tn := testkit.NewTenant(t, st.DB)
			tk := models.Task{ID: models.NewID(), WorkspaceID: tn.Workspace.ID, AgentID: tn.Agent.ID, Status: tc.status}
			require.NoError(t, st.DB.Create(&tk).Error)
			caller := task.Caller{WorkspaceID: tn.Workspace.ID, AgentID: tn.Agent.ID, Actor: "agent:" + tn.Agent.ID}

			v, err := svc.Post(context.Background(), caller, tk.ID, []byte(tc.body))
			var after models.Task
			require.NoError(t, st.DB.Where("id = ?", tk.ID).Take(&after).Error)
			var replies, events int64
			require.NoError(t, st.DB.Model(&models.TaskReply{}).Where("task_id = ?", tk.ID).Count(&replies).Error)
			require.NoError(t, st.DB.Model(&models.FeedEvent{}).Where("task_id = ?", tk.ID).Count(&events).Error)
			if tc.want == "" {
				var ae *apperr.Error
				require.True(t, errors.As(err, &ae), "%v", err)
				require.Equal(t, apperr.Conflict, ae.Code)
				require.Equal(t, tc.status, after.Status)
				require.Zero(t, replies+events, "a refused reply keeps nothing")
				return
			}
			require.NoError(t, err)
			require.Equal(t, tc.want, v.TaskStatus)
			require.Equal(t, tc.want, after.Status)
			require.EqualValues(t, 1, replies)
			require.EqualValues(t, 1, events)
		})
	}
}

// TestPostOnAnotherAgentsTask: another agent's task (even in the same
// workspace) is not found, and a refused reply leaves its status alone.
func TestPostOnAnotherAgentsTask(t *testing.T) {
	t.Parallel()
	st := testkit.Tx(t)
	blobs, err := storage.NewDir(t.TempDir())
	require.NoError(t, err)
	svc := reply.NewService(st, blobs)
	tn := testkit.NewTenant(t, st.DB)
	other := models.Agent{ID: models.NewID(), WorkspaceID: tn.Workspace.ID, Name: "other"}
	require.NoError(t, st.DB.Create(&other).Error)
	tk := models.Task{ID: models.NewID(), WorkspaceID: tn.Workspace.ID, AgentID: other.ID, Status: models.TaskRunning}
	require.NoError(t, st.DB.Create(&tk).Error)
	caller := task.Caller{WorkspaceID: tn.Workspace.ID, AgentID: tn.Agent.ID, Actor: "agent:" + tn.Agent.ID}
	_, err = svc.Post(context.Background(), caller, tk.ID, []byte(`{"final": true, "blocks": [{"type": "text", "text": "x"}]}`))
	var ae *apperr.Error
	require.True(t, errors.As(err, &ae), "%v", err)
	require.Equal(t, apperr.NotFound, ae.Code)
	var after models.Task
	require.NoError(t, st.DB.Where("id = ?", tk.ID).Take(&after).Error)
	require.Equal(t, models.TaskRunning, after.Status)
}
