package bindingspec

import (
	"bytes"
	"encoding/json"
	"reflect"
	"slices"
	"strings"
)

// Change is one entry of a version's diff, addressed by a path a person can
// read: "name", "integration_id", "capabilities", "writes.save_line" (an op
// added or removed) or "writes.save_line.columns" (one field of an op that
// changed). Before is absent for an addition, After for a removal.
type Change struct {
	Path   string `json:"path"`
	Before any    `json:"before,omitempty"`
	After  any    `json:"after,omitempty"`
}

// Content is what a version of a binding records and what a diff compares.
type Content struct {
	Name          string
	BindingKind   string
	IntegrationID string
	Spec          Spec
}

// ContentOf is the content of in as saved, with spec its validated
// allowed_operations (Validate's result).
func ContentOf(in Input, spec Spec) Content {
	return Content{Name: strings.TrimSpace(in.Name), BindingKind: in.BindingKind, IntegrationID: in.IntegrationID, Spec: spec}
}

// Diff lists the changes from prev to next; prev is nil for the first
// version, which then reads as every field and op added.
func Diff(prev *Content, next Content) []Change {
	changes := []Change{}
	var before Content
	if prev != nil {
		before = *prev
	}
	scalar := func(path, b, a string) {
		if b == a {
			return
		}
		c := Change{Path: path}
		if b != "" {
			c.Before = b
		}
		if a != "" {
			c.After = a
		}
		changes = append(changes, c)
	}
	scalar("name", before.Name, next.Name)
	scalar("binding_kind", before.BindingKind, next.BindingKind)
	scalar("integration_id", before.IntegrationID, next.IntegrationID)

	changes = diffSection(changes, "reads", keyed(before.Spec.Reads, func(r Read) string { return r.Op }), keyed(next.Spec.Reads, func(r Read) string { return r.Op }))
	changes = diffSection(changes, "writes", keyed(before.Spec.Writes, func(w Write) string { return w.Op }), keyed(next.Spec.Writes, func(w Write) string { return w.Op }))
	changes = diffSection(changes, "actions", keyed(before.Spec.Actions, func(a Action) string { return a.Name }), keyed(next.Spec.Actions, func(a Action) string { return a.Name }))
	changes = diffSection(changes, "http_calls", keyed(before.Spec.HTTPCalls, func(h HTTPCall) string { return h.Op }), keyed(next.Spec.HTTPCalls, func(h HTTPCall) string { return h.Op }))
	changes = diffSection(changes, "tools", keyed(before.Spec.Tools, func(t Tool) string { return t.Op }), keyed(next.Spec.Tools, func(t Tool) string { return t.Op }))

	if !slices.Equal(before.Spec.Capabilities, next.Spec.Capabilities) {
		c := Change{Path: "capabilities"}
		if len(before.Spec.Capabilities) > 0 {
			c.Before = before.Spec.Capabilities
		}
		if len(next.Spec.Capabilities) > 0 {
			c.After = next.Spec.Capabilities
		}
		changes = append(changes, c)
	}
	return changes
}

// namedEntry is one op (or action) as a generic JSON object, for comparing
// field by field.
type namedEntry struct {
	name   string
	fields map[string]any
}

func keyed[T any](items []T, name func(T) string) []namedEntry {
	out := make([]namedEntry, len(items))
	for i, it := range items {
		out[i] = namedEntry{name: name(it), fields: asObject(it)}
	}
	return out
}

// asObject renders v as the generic JSON object it is stored as.
func asObject(v any) map[string]any {
	raw, err := json.Marshal(v)
	if err != nil {
		return map[string]any{}
	}
	var m map[string]any
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	if err := dec.Decode(&m); err != nil {
		return map[string]any{}
	}
	return m
}

// diffSection reports ops added, changed (field by field) and removed. Order
// within a section carries no meaning, so a reorder is no change.
func diffSection(changes []Change, section string, before, after []namedEntry) []Change {
	old := make(map[string]map[string]any, len(before))
	for _, e := range before {
		old[e.name] = e.fields
	}
	for _, e := range after {
		prev, ok := old[e.name]
		path := section + "." + e.name
		if !ok {
			changes = append(changes, Change{Path: path, After: e.fields})
			continue
		}
		keys := make([]string, 0, len(prev)+len(e.fields))
		for k := range prev {
			keys = append(keys, k)
		}
		for k := range e.fields {
			if _, dup := prev[k]; !dup {
				keys = append(keys, k)
			}
		}
		slices.Sort(keys)
		for _, k := range keys {
			b, a := prev[k], e.fields[k]
			if reflect.DeepEqual(b, a) {
				continue
			}
			changes = append(changes, Change{Path: path + "." + k, Before: b, After: a})
		}
	}
	current := make(map[string]bool, len(after))
	for _, e := range after {
		current[e.name] = true
	}
	for _, e := range before {
		if !current[e.name] {
			changes = append(changes, Change{Path: section + "." + e.name, Before: e.fields})
		}
	}
	return changes
}
