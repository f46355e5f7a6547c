package bindingspec

import (
	"fmt"
	"slices"
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
