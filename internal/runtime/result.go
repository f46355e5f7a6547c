package runtime

// Result is a verb's success: its kind (v2's "kind") and the object the verb
// returns without the v2 header (v1). In v2 the result is Body without its
// "ok" member (seed 000: for /action, {results, responses}).
type Result struct {
	Kind string
	Body map[string]any
}

// V2 returns the v2 envelope of r.
func (r Result) V2() map[string]any {
	result := make(map[string]any, len(r.Body))
	for k, v := range r.Body {
		if k != "ok" {
			result[k] = v
		}
	}
	return map[string]any{"ok": true, "kind": r.Kind, "result": result}
}
