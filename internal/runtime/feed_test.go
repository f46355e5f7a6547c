package runtime_test

import (
	"context"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/appruntime/appruntime/internal/apperr"
	"github.com/appruntime/appruntime/internal/runtime"
	"github.com/appruntime/appruntime/internal/testkit"
	"github.com/appruntime/appruntime/models"
)

func TestFeedCommitsEveryRowAndIsolatesABadOne(t *testing.T) {
	t.Parallel()
	st := testkit.Schema(t)
	tn := testkit.NewTenant(t, st.DB)
	task := models.Task{ID: models.NewID(), WorkspaceID: tn.Workspace.ID, AgentID: tn.Agent.ID, Status: models.TaskRunning}
	require.NoError(t, st.DB.Create(&task).Error)
	feed := runtime.NewFeed(st.DB)
	defer feed.Close()

	const n = 200
	var wg sync.WaitGroup
	errs := make(chan error, n+1)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs <- feed.Append(context.Background(), models.FeedEvent{TaskID: task.ID, Type: models.FeedAgentAction, Name: "w", Payload: models.MustJSON(map[string]int{"i": i})})
		}()
	}
	wg.Add(1)
	go func() { // a row whose task does not exist fails alone
		defer wg.Done()
		errs <- feed.Append(context.Background(), models.FeedEvent{TaskID: models.NewID(), Type: models.FeedAgentAction, Name: "orphan"})
	}()
	wg.Wait()
	close(errs)
	failed := 0
	for err := range errs {
		if err != nil {
			failed++
		}
	}
	require.Equal(t, 1, failed, "only the orphan row fails")
	var count int64
	require.NoError(t, st.DB.Model(&models.FeedEvent{}).Where("task_id = ?", task.ID).Count(&count).Error)
	require.Equal(t, int64(n), count, "every acknowledged row is committed")
}

func TestAppendAfterCloseIsRetryableNotAPanic(t *testing.T) {
	t.Parallel()
	st := testkit.SQLite(t)
	feed := runtime.NewFeed(st.DB)
	feed.Close()
	err := feed.Append(context.Background(), models.FeedEvent{TaskID: models.NewID(), Type: models.FeedAgentAction})
	require.Equal(t, apperr.Unavailable, apperr.CodeOf(err))
}
