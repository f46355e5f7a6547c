package claim_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/appruntime/appruntime/internal/claim"
	"github.com/appruntime/appruntime/internal/store"
	"github.com/appruntime/appruntime/internal/testkit"
	"github.com/appruntime/appruntime/models"
)

// TestQueueOnBothDialects runs the queue's rules on Postgres and on the
// SQLite of dev mode: order, claim, a live claim skipped, an expired one
// free again, abort by the holder only, and expiry by its job.
func TestQueueOnBothDialects(t *testing.T) {
	t.Parallel()
	testkit.EachDialect(t, func(t *testing.T, st *store.Store) {
		tn := testkit.NewTenant(t, st.DB)
		ctx := context.Background()
		now := time.Now().UTC()
		clock := func() time.Time { return now }
		q := claim.NewQueue(claim.QueueOptions{Store: st, Now: func() time.Time { return clock() }})
		park := func(priority float64, age time.Duration) string {
			task := models.Task{ID: models.NewID(), WorkspaceID: tn.Workspace.ID, AgentID: tn.Agent.ID, Status: models.TaskWaitingForInput,
				Priority: priority, CreatedAt: now.Add(-age), UpdatedAt: now}
			require.NoError(t, st.DB.Create(&task).Error)
			step := models.Step{ID: models.NewID(), TaskID: task.ID, Kind: models.StepAppTool, Status: models.StepCompleted}
			require.NoError(t, st.DB.Create(&step).Error)
			require.NoError(t, st.DB.Create(&models.TaskAwait{ID: models.NewID(), TaskID: task.ID, SourceType: models.AwaitSourceAppTool,
				CorrelationKey: step.ID, Status: models.AwaitPending}).Error)
			return task.ID
		}
		// A reviewer asks again while holding a claim below: the limit
		// (TestClaimLimitOnBothDialects) is not what this test is about.
		require.NoError(t, st.DB.Model(&models.Workspace{}).Where("id = ?", tn.Workspace.ID).Update("review_claim_limit", 2).Error)
		low, high := park(1, time.Hour), park(5, time.Minute)
		me, other := tn.Admin.ID, models.NewID()
		require.NoError(t, st.DB.Create(&models.User{ID: other, WorkspaceID: tn.Workspace.ID, Email: other + "@example.test", Role: models.RoleReviewer, PasswordHash: "-"}).Error)

		c, err := q.Next(ctx, tn.Workspace.ID, me)
		require.NoError(t, err)
		require.Equal(t, high, c.TaskID)
		require.NotEmpty(t, c.StepID)
		c2, err := q.Next(ctx, tn.Workspace.ID, other)
		require.NoError(t, err)
		require.Equal(t, low, c2.TaskID)
		none, err := q.Next(ctx, tn.Workspace.ID, other)
		require.NoError(t, err)
		require.Nil(t, none)

		require.ErrorContains(t, q.Abort(ctx, tn.Workspace.ID, other, high), "not claimed by you")
		require.NoError(t, q.Holds(ctx, tn.Workspace.ID, me, high))

		// Past their time the claims are free again: each reviewer gets
		// the task assigned to them first; the sweep clears what was not
		// claimed since.
		clock = func() time.Time { return now.Add(claim.Duration + time.Second) }
		again, err := q.Next(ctx, tn.Workspace.ID, other)
		require.NoError(t, err)
		require.Equal(t, low, again.TaskID, "assigned to them")
		cleared, err := q.ClearExpired(ctx, clock())
		require.NoError(t, err)
		require.EqualValues(t, 1, cleared, "the claim taken since is not one that expired")
		var rows []models.Task
		require.NoError(t, st.DB.Where("id IN ?", []string{low, high}).Find(&rows).Error)
		for _, r := range rows {
			if r.ID == low {
				require.NotNil(t, r.ClaimedBy, "taken again")
				require.Equal(t, other, *r.ClaimedBy)
			} else {
				require.Nil(t, r.ClaimedBy, "cleared")
				require.Nil(t, r.ClaimExpiresAt)
				require.Equal(t, me, *r.AssignedTo, "the assignment stays")
			}
		}
		mine, err := q.Next(ctx, tn.Workspace.ID, me)
		require.NoError(t, err)
		require.Equal(t, high, mine.TaskID)
		require.NoError(t, q.Abort(ctx, tn.Workspace.ID, me, high))
		require.ErrorContains(t, q.Holds(ctx, tn.Workspace.ID, me, high), "do not hold")
	})
}
