package binding

import (
	"context"
	"fmt"
	"slices"

	"gorm.io/gorm"

	"github.com/appruntime/appruntime/models"
)

// UnscopedFixedColumn returns the first column, in name order, of an update
// or upsert op's fixed_values that is not also one of its key_columns, or ""
// when there is none (and always for an insert). Such a fixed value would
// be written over whichever row the request's keys name, so a bundle could
// take another task's row over (`"fixed_values": {"task_id": "{{task_id}}"}`
// with key id rewrites any row's task_id); as a key column the same value
// scopes the row the op may change to the session's own.
func (w *Write) UnscopedFixedColumn() string {
	if w.Mode != ModeUpdate && w.Mode != ModeUpsert {
		return ""
	}
	found := ""
	for col := range w.FixedValues {
		if !slices.Contains(w.KeyColumns, col) && (found == "" || col < found) {
			found = col
		}
	}
	return found
}

// Unscoped is a write op of a spec whose fixed value is not a key column
// (Write.UnscopedFixedColumn): saved before the rule, it is refused at run
// time until an admin fixes the binding.
type Unscoped struct {
	Op     string
	Mode   string
	Column string
}

// String says what is wrong and how to fix it.
func (u Unscoped) String() string {
	return fmt.Sprintf("write op %q (mode %s): fixed_values column %q is not one of its key_columns; "+
		"add it to key_columns (so it scopes the row) or remove the fixed value", u.Op, u.Mode, u.Column)
}

// UnscopedWrites lists the write ops of s that break the rule.
func UnscopedWrites(s Spec) []Unscoped {
	var out []Unscoped
	for i := range s.Writes {
		w := &s.Writes[i]
		if col := w.UnscopedFixedColumn(); col != "" {
			out = append(out, Unscoped{Op: w.Op, Mode: w.Mode, Column: col})
		}
	}
	return out
}

// StoredUnscoped is an Unscoped write op of a saved binding.
type StoredUnscoped struct {
	WorkspaceID string
	BindingID   string
	BindingName string
	Unscoped
}

// FindUnscopedWrites returns the write ops of every saved binding, in every
// workspace, that break the rule (bindings saved before it existed), by
// binding id. A stored document that no longer decodes is an error.
func FindUnscopedWrites(ctx context.Context, db *gorm.DB) ([]StoredUnscoped, error) {
	var rows []models.Binding
	if err := db.WithContext(ctx).Select("id", "workspace_id", "name", "allowed_operations").
		Order("id").Find(&rows).Error; err != nil {
		return nil, fmt.Errorf("binding: list bindings: %w", err)
	}
	var out []StoredUnscoped
	for _, r := range rows {
		var spec Spec
		if err := decodeStored(r.AllowedOperations, &spec); err != nil {
			return nil, fmt.Errorf("binding %s: %w", r.ID, err)
		}
		for _, u := range UnscopedWrites(spec) {
			out = append(out, StoredUnscoped{WorkspaceID: r.WorkspaceID, BindingID: r.ID, BindingName: r.Name, Unscoped: u})
		}
	}
	return out, nil
}
