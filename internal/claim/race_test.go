package claim_test

import (
	"context"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
	"gorm.io/gorm"

	"github.com/appruntime/appruntime/internal/claim"
	"github.com/appruntime/appruntime/internal/review"
	"github.com/appruntime/appruntime/internal/testkit"
	"github.com/appruntime/appruntime/models"
)

// TestATaskSettledDuringAClaimIsNotHandedOver: two reviewers (claim limit
// 1) take a queue of parked tasks through review/next, each approving
// (settling the await of) what it was handed at once. Each task is handed
// to one reviewer and settled once. On Postgres a claim statement that
// began before another reviewer's claim and approval of a task committed
// used to lock that task afterwards: its row passed the recheck (claim
// cleared again) while the await's pending state was read from the
// statement's older snapshot, so the task, approved already, was handed
// to a second reviewer, whose approval then failed (409) and whose dead
// claim counted against their limit. The claim now locks the pending await
// with the task, so the recheck reads it as it is (the chaos soak saw it
// once as a task counted for two reviewers). Postgres only: SQLite
// serialises writers, and its busy handler is not fair, so two reviewers
// in a tight loop can keep one waiting past the busy timeout under -race.
func TestATaskSettledDuringAClaimIsNotHandedOver(t *testing.T) {
	t.Parallel()
	st := testkit.Schema(t)
	ctx := context.Background()
	tn := testkit.NewTenant(t, st.DB)
	other := models.User{ID: models.NewID(), WorkspaceID: tn.Workspace.ID, Email: "second@example.test", Role: models.RoleAdmin, PasswordHash: "-"}
	require.NoError(t, st.DB.Create(&other).Error)
	const tasks = 300
	awaitOf := map[string]string{}
	require.NoError(t, st.Tx(ctx, func(tx *gorm.DB) error {
		for range tasks {
			task := models.Task{ID: models.NewID(), WorkspaceID: tn.Workspace.ID, AgentID: tn.Agent.ID, Status: models.TaskWaitingForInput}
			step := models.Step{ID: models.NewID(), TaskID: task.ID, Kind: models.StepAppTool, Status: models.StepCompleted}
			aw := models.TaskAwait{ID: models.NewID(), TaskID: task.ID, SourceType: models.AwaitSourceAppTool, CorrelationKey: step.ID, Status: models.AwaitPending}
			for _, row := range []any{&task, &step, &aw} {
				if err := tx.Create(row).Error; err != nil {
					return err
				}
			}
			awaitOf[task.ID] = aw.ID
		}
		return nil
	}))
	q := claim.NewQueue(claim.QueueOptions{Store: st})

	var mu sync.Mutex
	handedTo := map[string][]string{} // task -> the reviewers review/next handed it to
	var wg sync.WaitGroup
	for _, reviewer := range []string{tn.Admin.ID, other.ID} {
		wg.Go(func() {
			for {
				c, err := q.Next(ctx, tn.Workspace.ID, reviewer)
				if err != nil || c == nil {
					if err != nil {
						t.Errorf("reviewer %s: %v", reviewer, err)
					}
					return // nothing left for them, or a dead claim holds them
				}
				mu.Lock()
				handedTo[c.TaskID] = append(handedTo[c.TaskID], reviewer)
				mu.Unlock()
				var released bool
				err = st.Tx(ctx, func(tx *gorm.DB) error {
					_, _, released, err = review.ReleaseAwait(ctx, tx, tn.Workspace.ID, awaitOf[c.TaskID], "user:"+reviewer, "approved")
					return err
				})
				if err != nil || !released {
					t.Errorf("reviewer %s was handed task %s, settled already (err %v)", reviewer, c.TaskID, err)
					return
				}
			}
		})
	}
	wg.Wait()
	require.Len(t, handedTo, tasks, "every task was handed over")
	for task, who := range handedTo {
		require.Len(t, who, 1, "task %s was handed to %v", task, who)
	}
}
