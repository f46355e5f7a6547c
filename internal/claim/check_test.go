package claim_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"gorm.io/gorm"

	"github.com/appruntime/appruntime/internal/apperr"
	"github.com/appruntime/appruntime/internal/claim"
	"github.com/appruntime/appruntime/internal/config"
	"github.com/appruntime/appruntime/internal/session"
	"github.com/appruntime/appruntime/internal/store"
	"github.com/appruntime/appruntime/internal/testkit"
	"github.com/appruntime/appruntime/models"
)

// TestClaimGuardsMintOnBothDialects: while a reviewer holds a task, a mint
// guarded by Check for anyone else is a 409 naming the holder and the
// claim's end, and records no session; the holder mints; once the claim is
// put back, or past its time, anyone does.
func TestClaimGuardsMintOnBothDialects(t *testing.T) {
	t.Parallel()
	testkit.EachDialect(t, func(t *testing.T, st *store.Store) {
		tn := testkit.NewTenant(t, st.DB)
		rd := testkit.Redis(t)
		ctx := context.Background()
		issuer, err := session.NewIssuer(session.IssuerOptions{Store: st, Redis: rd.Client, KeyPrefix: rd.Prefix,
			Keys: []config.Key{{ID: "k", Secret: []byte("claim-test-session-key-0123456789")}}, Issuer: "claim-test"})
		require.NoError(t, err)
		t.Cleanup(issuer.Close)
		q := claim.NewQueue(claim.QueueOptions{Store: st})
		task := models.Task{ID: models.NewID(), WorkspaceID: tn.Workspace.ID, AgentID: tn.Agent.ID, Status: models.TaskWaitingForInput}
		require.NoError(t, st.DB.Create(&task).Error)
		step := models.Step{ID: models.NewID(), TaskID: task.ID, Kind: models.StepAppTool, Status: models.StepCompleted}
		require.NoError(t, st.DB.Create(&step).Error)
		require.NoError(t, st.DB.Create(&models.TaskAwait{ID: models.NewID(), TaskID: task.ID, SourceType: models.AwaitSourceAppTool,
			CorrelationKey: step.ID, Status: models.AwaitPending}).Error)
		holder := models.User{ID: models.NewID(), WorkspaceID: tn.Workspace.ID, Email: "holder-" + models.NewID()[:8] + "@example.test",
			Role: models.RoleReviewer, PasswordHash: "-"}
		require.NoError(t, st.DB.Create(&holder).Error)
		other := tn.Admin.ID
		mint := func(userID string) error {
			_, _, err := issuer.Mint(ctx, session.MintInput{WorkspaceID: tn.Workspace.ID, TaskID: task.ID, AgentID: tn.Agent.ID,
				StepID: step.ID, ConfiguredToolID: models.NewID(), BindingID: models.NewID(), UserID: userID,
				GuardFunc: func(ctx context.Context, tx *gorm.DB) error { return claim.Check(ctx, tx, task.ID, userID) }})
			return err
		}
		act := func(userID string) error {
			return st.Tx(ctx, func(tx *gorm.DB) error { return claim.Check(ctx, tx, task.ID, userID) })
		}
		sessions := func() int64 {
			var n int64
			require.NoError(t, st.DB.Model(&models.AppSession{}).Where("task_id = ?", task.ID).Count(&n).Error)
			return n
		}

		require.NoError(t, mint(other), "no claim yet")
		c, err := q.Next(ctx, tn.Workspace.ID, holder.ID)
		require.NoError(t, err)
		require.Equal(t, task.ID, c.TaskID)

		for _, who := range []string{other, ""} {
			err = mint(who)
			require.Equal(t, apperr.Conflict, apperr.CodeOf(err), "%q: %v", who, err)
			require.ErrorContains(t, err, holder.Email)
			require.ErrorContains(t, err, c.ClaimExpiresAt.UTC().Format(time.RFC3339))
			require.Equal(t, apperr.Conflict, apperr.CodeOf(act(who)))
		}
		require.EqualValues(t, 1, sessions(), "a refused mint records nothing")
		require.NoError(t, mint(holder.ID))
		require.NoError(t, act(holder.ID))

		require.NoError(t, q.Abort(ctx, tn.Workspace.ID, holder.ID, task.ID))
		require.NoError(t, mint(other), "put back, the task is anyone's")
		require.NoError(t, act(other))

		_, err = q.Next(ctx, tn.Workspace.ID, holder.ID)
		require.NoError(t, err)
		require.Error(t, mint(other))
		require.NoError(t, st.DB.Model(&models.Task{}).Where("id = ?", task.ID).Update("claim_expires_at", time.Now().Add(-time.Second)).Error)
		require.NoError(t, mint(other), "past its time the claim holds nothing")
		require.NoError(t, act(other))
	})
}
