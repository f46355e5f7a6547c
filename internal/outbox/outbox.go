// Package outbox is the transactional outbox: what must happen because a
// transaction committed (a resume event, a summary pass) is written as an
// outbox row in that transaction, and the relay moves committed rows to the
// queue with the row id as the job id, so a crash between commit and enqueue
// loses nothing and enqueues nothing twice.
package outbox

import (
	"fmt"

	"gorm.io/gorm"

	"github.com/appruntime/appruntime/jobs"
	"github.com/appruntime/appruntime/models"
)

// Kinds of outbox rows; each is the Kind of the job the relay enqueues for it.
var (
	KindResumeEvent = jobs.ResumeEvent{}.Kind()
	KindSummary     = jobs.Summary{}.Kind()
)

// Add writes an outbox row of kind with payload inside tx and returns its id.
// The row becomes visible to the relay only when tx commits.
func Add(tx *gorm.DB, kind string, payload any) (string, error) {
	row := models.Outbox{ID: models.NewID(), Kind: kind, Payload: models.MustJSON(payload)}
	if err := tx.Create(&row).Error; err != nil {
		return "", fmt.Errorf("outbox: add %s: %w", kind, err)
	}
	return row.ID, nil
}
