// Package audit records who changed what: every admin change through the
// API or the console writes one audit_log row, in the transaction of the change.
package audit

import (
	"context"
	"fmt"

	"gorm.io/gorm"

	"github.com/appruntime/appruntime/models"
)

// Entry is one change.
type Entry struct {
	WorkspaceID string
	Actor       string // "user:<id>", "token:<id>", "system"
	Action      string // "binding.update", "await.release", …
	TargetType  string
	TargetID    string
	Detail      any // marshalled to JSON; may be nil
}

// Record writes e in tx.
func Record(ctx context.Context, tx *gorm.DB, e Entry) error {
	row := models.AuditEntry{
		ID: models.NewID(), Actor: e.Actor, Action: e.Action, TargetType: e.TargetType, TargetID: e.TargetID,
	}
	if e.WorkspaceID != "" {
		row.WorkspaceID = &e.WorkspaceID
	}
	if e.Detail != nil {
		row.Detail = models.MustJSON(e.Detail)
	}
	if err := tx.WithContext(ctx).Create(&row).Error; err != nil {
		return fmt.Errorf("audit: record %s: %w", e.Action, err)
	}
	return nil
}
