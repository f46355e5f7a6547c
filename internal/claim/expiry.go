package claim

import (
	"context"
	"fmt"
	"time"

	"github.com/appruntime/appruntime/models"
)

// expiredClaimBatch bounds the claims one statement of ClearExpired clears.
const expiredClaimBatch = 1000

// ClearExpired clears the claims whose time ran out before now, oldest
// first, a statement per expiredClaimBatch, and returns how many it
// cleared. It tidies the rows only: a claim past its time is free already
// (Next hands its task out, Check refuses its holder), so the worker's
// sweep runs it every SWEEP_INTERVAL rather than a job per claim
// (docs/architecture.md#12-postgres-records-redis-carries). A claim taken
// again meanwhile is left alone: the outer condition is checked again on
// the row the statement updates. The assignment stays: the task still
// sorts first for its reviewer.
func (q *Queue) ClearExpired(ctx context.Context, now time.Time) (int64, error) {
	now = now.UTC()
	var cleared int64
	for {
		db := q.store.DB.WithContext(ctx)
		// The partial index tasks_review_claims holds exactly the claimed
		// parked tasks (its predicate is written out, not a parameter, so
		// a generic plan can use it); a task's claim is released when it
		// settles (Release), so no other task holds one.
		expired := db.Model(&models.Task{}).Select("id").
			Where("status = '"+models.TaskWaitingForInput+"' AND claim_expires_at IS NOT NULL AND claim_expires_at <= ?", now).
			Order("claim_expires_at").Limit(expiredClaimBatch)
		res := db.Model(&models.Task{}).Where("id IN (?) AND claim_expires_at <= ?", expired, now).
			Updates(map[string]any{"claimed_by": nil, "claim_expires_at": nil})
		if res.Error != nil {
			return cleared, fmt.Errorf("claim: clear expired claims: %w", res.Error)
		}
		cleared += res.RowsAffected
		if res.RowsAffected < expiredClaimBatch {
			return cleared, nil
		}
	}
}
