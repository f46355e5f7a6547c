package audit

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"gorm.io/gorm"

	"github.com/appruntime/appruntime/models"
)

// EntriesPerPage is how many entries one page of the audit log holds.
const EntriesPerPage = 50

// View is one audit entry as an admin reads it.
type View struct {
	ID         string
	Actor      string
	Action     string
	TargetType string
	TargetID   string
	Detail     json.RawMessage // nil when the entry has none
	CreatedAt  time.Time
}

// Page is one page of a workspace's audit log, newest first.
type Page struct {
	Entries []View
	Page    int
	HasMore bool
}

// List returns page (1-based; 0 is the first) of the workspace's audit log,
// newest first.
func List(ctx context.Context, db *gorm.DB, workspaceID string, page int) (Page, error) {
	page = max(page, 1)
	var rows []models.AuditEntry
	err := db.WithContext(ctx).Where("workspace_id = ?", workspaceID).Order("created_at DESC, id DESC").
		Offset((page - 1) * EntriesPerPage).Limit(EntriesPerPage + 1).Find(&rows).Error
	if err != nil {
		return Page{}, fmt.Errorf("audit: list: %w", err)
	}
	out := Page{Page: page, HasMore: len(rows) > EntriesPerPage, Entries: make([]View, 0, min(len(rows), EntriesPerPage))}
	for _, r := range rows[:min(len(rows), EntriesPerPage)] {
		v := View{ID: r.ID, Actor: r.Actor, Action: r.Action, TargetType: r.TargetType, TargetID: r.TargetID, CreatedAt: r.CreatedAt}
		if len(r.Detail) > 0 {
			v.Detail = json.RawMessage(r.Detail)
		}
		out.Entries = append(out.Entries, v)
	}
	return out, nil
}
