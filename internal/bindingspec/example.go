package bindingspec

import (
	"bytes"
	"encoding/json"
	"slices"
)

// exampleReadRows is how many rows an example read asks for.
const exampleReadRows = 10

// ExamplePayload returns a payload of the shape the op named name takes
// (docs/bundle-authors.md#the-runtime-api-what-a-bundle-calls), for a
// person to fill in: a read selects its declared columns and a page of
// exampleReadRows, with an empty filter per filterable column left out (a
// filter's value depends on the column's type); a write's row names every
// key and writable column, valued null; an http_call names each placeholder
// a bundle supplies (the session's own are filled by the session), valued
// ""; an action has a row per write op and the values of its http_calls.
// ok is false when spec has no such op. The output is indented JSON.
func ExamplePayload(spec Spec, kind, name string) (json.RawMessage, bool) {
	var v any
	switch kind {
	case "read":
		r, ok := findRead(spec, name)
		if !ok {
			return nil, false
		}
		v = map[string]any{"columns": r.Columns, "limit": min(exampleReadRows, r.pageSize())}
	case "write":
		w, ok := findWrite(spec, name)
		if !ok {
			return nil, false
		}
		v = map[string]any{"row": exampleRow(w)}
	case "http_call":
		h, ok := findCall(spec, name)
		if !ok {
			return nil, false
		}
		v = exampleValues(callPlaceholders(h))
	case "action":
		i := slices.IndexFunc(spec.Actions, func(a Action) bool { return a.Name == name })
		if i < 0 {
			return nil, false
		}
		a := spec.Actions[i]
		rows := map[string]any{}
		for _, op := range a.Writes {
			if w, ok := findWrite(spec, op); ok {
				rows[op] = exampleRow(w)
			}
		}
		var names []string
		for _, op := range a.HTTPCalls {
			if h, ok := findCall(spec, op); ok {
				names = append(names, callPlaceholders(h)...)
			}
		}
		p := map[string]any{}
		if len(rows) > 0 {
			p["rows"] = rows
		}
		if len(names) > 0 {
			p["values"] = exampleValues(names)
		}
		v = p
	default:
		return nil, false
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(v); err != nil {
		return nil, false
	}
	return bytes.TrimRight(buf.Bytes(), "\n"), true
}

// pageSize is the rows per page the read serves.
func (r Read) pageSize() int {
	if r.Limit > 0 {
		return r.Limit
	}
	return DefaultReadLimit
}

func findRead(spec Spec, name string) (Read, bool) {
	i := slices.IndexFunc(spec.Reads, func(r Read) bool { return r.Op == name })
	if i < 0 {
		return Read{}, false
	}
	return spec.Reads[i], true
}

func findWrite(spec Spec, name string) (Write, bool) {
	i := slices.IndexFunc(spec.Writes, func(w Write) bool { return w.Op == name })
	if i < 0 {
		return Write{}, false
	}
	return spec.Writes[i], true
}

func findCall(spec Spec, name string) (HTTPCall, bool) {
	i := slices.IndexFunc(spec.HTTPCalls, func(h HTTPCall) bool { return h.Op == name })
	if i < 0 {
		return HTTPCall{}, false
	}
	return spec.HTTPCalls[i], true
}

// exampleRow is a write's row: its key and writable columns (not those its
// fixed values set), each null.
func exampleRow(w Write) map[string]any {
	row := map[string]any{}
	for _, col := range slices.Concat(w.KeyColumns, w.Columns) {
		if _, fixed := w.FixedValues[col]; !fixed {
			row[col] = nil
		}
	}
	return row
}

// exampleValues maps each name to "".
func exampleValues(names []string) map[string]any {
	out := map[string]any{}
	for _, n := range names {
		out[n] = ""
	}
	return out
}

// callPlaceholders lists the placeholders of h's url, query, headers and
// body template that a bundle supplies: the session's own are left out.
func callPlaceholders(h HTTPCall) []string {
	var texts []string
	texts = append(texts, h.URL)
	for _, v := range h.Query {
		texts = append(texts, v)
	}
	for _, v := range h.Headers {
		texts = append(texts, v)
	}
	if len(h.BodyTemplate) > 0 {
		var body any
		if json.Unmarshal(h.BodyTemplate, &body) == nil {
			texts = appendStrings(texts, body)
		}
	}
	var names []string
	for _, t := range texts {
		found, err := placeholders(t)
		if err != nil {
			continue
		}
		for _, n := range found {
			if !slices.Contains(SessionPlaceholders, n) && !slices.Contains(names, n) {
				names = append(names, n)
			}
		}
	}
	slices.Sort(names)
	return names
}

// appendStrings appends every string of a decoded JSON value, keys included.
func appendStrings(out []string, v any) []string {
	switch x := v.(type) {
	case string:
		out = append(out, x)
	case []any:
		for _, e := range x {
			out = appendStrings(out, e)
		}
	case map[string]any:
		for k, e := range x {
			out = append(out, k)
			out = appendStrings(out, e)
		}
	}
	return out
}
