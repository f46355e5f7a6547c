package claim

import (
	"context"
	"errors"
	"fmt"
	"time"

	"gorm.io/gorm"
	"gorm.io/gorm/clause"

	"github.com/appruntime/appruntime/internal/apperr"
	"github.com/appruntime/appruntime/models"
)

// Check refuses, inside tx, anyone but the holder of a live review
// claim on taskID: 409 naming the holder and the claim's end. It locks the
// task's row until tx ends (SELECT … FOR UPDATE on Postgres; SQLite's writer
// holds the database), so a claim taken meanwhile waits for tx (or, in the
// queue's SKIP LOCKED, passes the task over) instead of slipping in between
// the check and what tx does next. A task under no claim, or one past its
// time, passes; so does a task that is gone (the caller's own lookup says
// so). userID is the caller's user; "" holds no claim.
func Check(ctx context.Context, tx *gorm.DB, taskID, userID string) error {
	tx = tx.WithContext(ctx)
	var t models.Task
	res := tx.Clauses(clause.Locking{Strength: "UPDATE"}).Select("id", "claimed_by", "claim_expires_at").
		Where("id = ?", taskID).Limit(1).Find(&t)
	if res.Error != nil {
		return fmt.Errorf("claim: check claim of task %s: %w", taskID, res.Error)
	}
	if res.RowsAffected == 0 || t.ClaimedBy == nil || t.ClaimExpiresAt == nil || !t.ClaimExpiresAt.After(time.Now()) {
		return nil
	}
	if userID != "" && *t.ClaimedBy == userID {
		return nil
	}
	holder := *t.ClaimedBy
	var u models.User
	err := tx.Select("email").Where("id = ?", holder).Take(&u).Error
	if err != nil && !errors.Is(err, gorm.ErrRecordNotFound) {
		return fmt.Errorf("claim: load claim holder of task %s: %w", taskID, err)
	}
	if u.Email != "" {
		holder = u.Email + " (" + holder + ")"
	}
	until := t.ClaimExpiresAt.UTC().Format(time.RFC3339)
	e := apperr.Conflictf("task %s is claimed by reviewer %s until %s: only they may open or act on it until they finish or put it back, the claim expires, or an admin releases it",
		taskID, holder, until)
	e.Detail = map[string]any{"claimed_by": *t.ClaimedBy, "claim_expires_at": until}
	return e
}

// Release drops the claim on taskID inside tx, the transaction that settles
// the task's await (a resolving action, an admin's release or abort, an
// await's expiry): a settled task has nothing left to review, so its claim
// must not outlive the settling commit.
func Release(tx *gorm.DB, taskID string) error {
	err := tx.Model(&models.Task{}).Where("id = ? AND claimed_by IS NOT NULL", taskID).
		Updates(map[string]any{"claimed_by": nil, "claim_expires_at": nil}).Error
	if err != nil {
		return fmt.Errorf("claim: release claim of task %s: %w", taskID, err)
	}
	return nil
}
