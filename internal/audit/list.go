package audit

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"gorm.io/gorm"

	"github.com/appruntime/appruntime/internal/store"
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

// Filter narrows a listing of the audit log; its zero value lists every
// entry.
type Filter struct {
	// Actor keeps one actor's entries ("user:<id>", "token:<id>", ...).
	Actor string
	// Action and Object find text, case-insensitively, in the action and
	// in the target's type or id.
	Action, Object string
	// From and To keep the entries made at or after From and before To;
	// zero times bound nothing.
	From, To time.Time
}

// List returns page (1-based; 0 is the first) of the workspace's audit log,
// newest first.
func List(ctx context.Context, db *gorm.DB, workspaceID string, page int) (Page, error) {
	return Search(ctx, db, workspaceID, Filter{}, page)
}

// Search returns page (1-based; 0 is the first) of the workspace's audit
// entries that f keeps, newest first.
func Search(ctx context.Context, db *gorm.DB, workspaceID string, f Filter, page int) (Page, error) {
	page = max(page, 1)
	q := db.WithContext(ctx).Where("workspace_id = ?", workspaceID)
	if f.Actor != "" {
		q = q.Where("actor = ?", f.Actor)
	}
	if strings.TrimSpace(f.Action) != "" {
		q = q.Where("LOWER(action) LIKE ?"+store.LikeEscape, store.Contains(f.Action))
	}
	if strings.TrimSpace(f.Object) != "" {
		like := store.Contains(f.Object)
		q = q.Where("(LOWER(target_type) LIKE ?"+store.LikeEscape+" OR LOWER(target_id) LIKE ?"+store.LikeEscape+")", like, like)
	}
	if !f.From.IsZero() {
		q = q.Where("created_at >= ?", f.From)
	}
	if !f.To.IsZero() {
		q = q.Where("created_at < ?", f.To)
	}
	var rows []models.AuditEntry
	err := q.Order("created_at DESC, id DESC").
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
