// Package outbox is the transactional outbox: what must happen because a
// transaction committed (a resume event, a summary pass) is written as an
// outbox row in that transaction, and the relay moves committed rows to the
// queue with the row id as the job id, so a crash between commit and enqueue
// loses nothing and enqueues nothing twice.
package outbox

import (
	"context"
	"fmt"
	"time"

	"gorm.io/gorm"

	"github.com/appruntime/appruntime/internal/requestid"
	"github.com/appruntime/appruntime/internal/tracing"
	"github.com/appruntime/appruntime/jobs"
	"github.com/appruntime/appruntime/models"
)

// Kinds of outbox rows; each is the Kind of the job the relay enqueues for it.
var (
	KindResumeEvent = jobs.ResumeEvent{}.Kind()
	KindSummary     = jobs.Summary{}.Kind()
	KindAwaitExpiry = jobs.AwaitExpiry{}.Kind()
	KindProducer    = jobs.RunProducer{}.Kind()
	KindOCR         = jobs.OCRFile{}.Kind()
)

// Scheduled is the part of a payload that delays its job: a row whose
// payload carries due_at is enqueued to run at that time, not at once.
type Scheduled struct {
	DueAt *time.Time `json:"due_at,omitempty"`
}

// Add writes an outbox row of kind with payload inside tx and returns its id.
// The row becomes visible to the relay only when tx commits. The request id
// of tx's context is kept with it, and so is its trace context with tracing
// on: both travel with the job the relay enqueues.
func Add(tx *gorm.DB, kind string, payload any) (string, error) {
	row := models.Outbox{ID: models.NewID(), Kind: kind, Payload: models.MustJSON(payload)}
	var due Scheduled
	if err := row.Payload.Decode(&due); err == nil && due.DueAt != nil {
		at := due.DueAt.UTC()
		row.DueAt = &at
	}
	if id := requestid.From(tx.Statement.Context); requestid.Valid(id) {
		row.RequestID = &id
	}
	if tp := tracing.Traceparent(tx.Statement.Context); tp != "" {
		row.Traceparent = &tp
	}
	if err := tx.Create(&row).Error; err != nil {
		return "", fmt.Errorf("outbox: add %s: %w", kind, err)
	}
	return row.ID, nil
}

// pruneBatch bounds the rows one prune statement deletes, so that pruning a
// long backlog never holds locks (or bloats one transaction) for long.
const pruneBatch = 1000

// Prune deletes the rows done before cutoff and returns how many. Rows
// still owed (unsent, or sent and not done) are never pruned, however old. The worker runs it periodically with
// cutoff = now - OUTBOX_RETENTION.
func Prune(ctx context.Context, db *gorm.DB, cutoff time.Time) (int64, error) {
	var total int64
	for {
		res := db.WithContext(ctx).Exec(`DELETE FROM outbox WHERE id IN
			(SELECT id FROM outbox WHERE done_at IS NOT NULL AND done_at < ? LIMIT ?)`, cutoff.UTC(), pruneBatch)
		if res.Error != nil {
			return total, fmt.Errorf("outbox: prune: %w", res.Error)
		}
		total += res.RowsAffected
		if res.RowsAffected < pruneBatch {
			return total, nil
		}
	}
}

// OldestUnsentAge returns how long the oldest row not yet relayed has
// waited, 0 when every row is sent: the lag of resume events behind their
// commit (the appruntime_outbox_oldest_unsent_age_seconds gauge).
func OldestUnsentAge(ctx context.Context, db *gorm.DB) (time.Duration, error) {
	var oldest models.Outbox
	err := db.WithContext(ctx).Select("created_at").Where("sent_at IS NULL").Order("created_at").Limit(1).Find(&oldest).Error
	if err != nil {
		return 0, fmt.Errorf("outbox: oldest unsent: %w", err)
	}
	if oldest.CreatedAt.IsZero() {
		return 0, nil
	}
	return max(time.Since(oldest.CreatedAt), 0), nil
}

// MarkDone records that row id's job finished for good (it ran, was
// refused, or ran out of retries): the sweep no longer owes it. Marking a
// row twice keeps the first time.
func MarkDone(ctx context.Context, db *gorm.DB, id string) error {
	err := db.WithContext(ctx).Model(&models.Outbox{}).Where("id = ? AND done_at IS NULL", id).
		Update("done_at", time.Now().UTC()).Error
	if err != nil {
		return fmt.Errorf("outbox: mark %s done: %w", id, err)
	}
	return nil
}

// IsDone reports whether row id's job already finished for good: a job
// run again after Redis lost and the sweep re-created it checks this
// before acting. A missing row (pruned) counts as done.
func IsDone(ctx context.Context, db *gorm.DB, id string) (bool, error) {
	var rows []models.Outbox
	if err := db.WithContext(ctx).Select("id", "done_at").Where("id = ?", id).Limit(1).Find(&rows).Error; err != nil {
		return false, fmt.Errorf("outbox: load %s: %w", id, err)
	}
	return len(rows) == 0 || rows[0].DoneAt != nil, nil
}
