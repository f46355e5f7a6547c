package task_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/appruntime/appruntime/internal/outbox"
	"github.com/appruntime/appruntime/internal/review"
	"github.com/appruntime/appruntime/internal/task"
	"github.com/appruntime/appruntime/models"
)

func TestAwaitExpiryIsScheduledWithTheAwait(t *testing.T) {
	t.Parallel()
	f := newFixture(t, nil)
	ctx := context.Background()
	seconds := 600
	require.NoError(t, f.st.DB.Model(&models.ConfiguredTool{}).Where("id = ?", f.awaiting.ID).Update("await_expiry_seconds", seconds).Error)

	tk := f.newTask(t)
	st, err := f.svc.AddAppToolStep(ctx, f.caller, tk.ID, task.StepInput{ConfiguredToolID: f.awaiting.ID})
	require.NoError(t, err)
	var aw models.TaskAwait
	require.NoError(t, f.st.DB.Where("correlation_key = ?", st.ID).Take(&aw).Error)

	var rows []models.Outbox
	require.NoError(t, f.st.DB.Where("kind = ?", outbox.KindAwaitExpiry).Find(&rows).Error)
	require.Len(t, rows, 1)
	var p review.AwaitExpiryPayload
	require.NoError(t, json.Unmarshal(rows[0].Payload, &p))
	require.Equal(t, aw.ID, p.AwaitID)
	require.Equal(t, f.tenant.Workspace.ID, p.WorkspaceID)
	require.WithinDuration(t, time.Now().Add(600*time.Second), *p.DueAt, 30*time.Second)

	// A tool without await_expiry_seconds schedules nothing.
	tk2 := f.newTask(t)
	require.NoError(t, f.st.DB.Model(&models.ConfiguredTool{}).Where("id = ?", f.awaiting.ID).Update("await_expiry_seconds", nil).Error)
	_, err = f.svc.AddAppToolStep(ctx, f.caller, tk2.ID, task.StepInput{ConfiguredToolID: f.awaiting.ID})
	require.NoError(t, err)
	var n int64
	require.NoError(t, f.st.DB.Model(&models.Outbox{}).Where("kind = ?", outbox.KindAwaitExpiry).Count(&n).Error)
	require.EqualValues(t, 1, n)
}
