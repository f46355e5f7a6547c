package claim

import (
	"context"
	"fmt"

	"gorm.io/gorm"
)

// RouteToAgentPools gives taskID, parked for review inside tx, the review
// pools its agent agentID is assigned at this moment, replacing those of an
// earlier park: the queue then hands it only to those pools' members. An
// agent without pools leaves the task with none, any reviewer's of its
// workspace (docs/admins.md#review-pools-and-the-claim-limit). Changing an
// agent's pools later moves only the tasks parked after the change.
func RouteToAgentPools(ctx context.Context, tx *gorm.DB, taskID, agentID string) error {
	db := tx.WithContext(ctx)
	if err := db.Exec(`DELETE FROM task_review_pools WHERE task_id = ?`, taskID).Error; err != nil {
		return fmt.Errorf("claim: clear review pools of task %s: %w", taskID, err)
	}
	err := db.Exec(`INSERT INTO task_review_pools (task_id, pool_id, task_created_at)
	  SELECT t.id, ap.pool_id, t.created_at FROM tasks t JOIN agent_review_pools ap ON ap.agent_id = ? WHERE t.id = ?`,
		agentID, taskID).Error
	if err != nil {
		return fmt.Errorf("claim: route task %s to its agent's review pools: %w", taskID, err)
	}
	return nil
}
