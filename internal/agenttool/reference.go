package agenttool

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	"github.com/appruntime/appruntime/internal/apperr"
)

// The reference grammar of seed 003 ("References"):
//
//	${input}              the whole input (a tool's, or a button's)
//	${input.a.b}          a nested value; a segment that is a decimal index
//	                      (0, 1, 12; no sign, no leading zero) picks an array
//	                      element, any other segment an object key
//	${env.NAME}           a variable of the target component's declared env
//	$${                   a literal "${" (the text after it is not a reference)
//
// A path segment is [A-Za-z0-9_-]+, so a key holding a dot or other
// punctuation cannot be addressed; an env name is [A-Za-z_][A-Za-z0-9_]*.
// Anything else between "${" and "}" is an unknown reference and an "${"
// without its "}" is malformed: both are refused when the declaration is
// saved. A "$" not followed by "{" (nor "${") is literal.
//
// Resolution is single pass: a value is written into the result and never
// read again, so an input value "${env.SECRET}" is sent as that text.
const (
	refOpen    = "${"
	refEscaped = "$${"
	refClose   = "}"
)

// Reference namespaces.
const (
	nsInput = "input"
	nsEnv   = "env"
)

// ref is one parsed reference.
type ref struct {
	ns   string   // nsInput or nsEnv
	path []string // input path segments (empty: the whole input)
	name string   // env variable name
}

// String writes r back as it is written in a template.
func (r ref) String() string {
	switch {
	case r.ns == nsEnv:
		return refOpen + nsEnv + "." + r.name + refClose
	case len(r.path) == 0:
		return refOpen + nsInput + refClose
	}
	return refOpen + nsInput + "." + strings.Join(r.path, ".") + refClose
}

// part is a run of literal text, or one reference when r is set.
type part struct {
	text string
	r    *ref
}

// template is a parsed string: literal runs and references.
type template []part

// whole returns the template's reference when the template is exactly one
// reference and nothing else.
func (t template) whole() (*ref, bool) {
	if len(t) == 1 && t[0].r != nil {
		return t[0].r, true
	}
	return nil, false
}

// refs returns the template's references in order.
func (t template) refs() []ref {
	var out []ref
	for _, p := range t {
		if p.r != nil {
			out = append(out, *p.r)
		}
	}
	return out
}

// parseTemplate splits s into literal runs and references, or returns an
// error quoting the first malformed or unknown reference.
func parseTemplate(s string) (template, error) {
	var out template
	var lit strings.Builder
	flush := func() {
		if lit.Len() > 0 {
			out = append(out, part{text: lit.String()})
			lit.Reset()
		}
	}
	for i := 0; i < len(s); {
		switch {
		case strings.HasPrefix(s[i:], refEscaped):
			lit.WriteString(refOpen)
			i += len(refEscaped)
		case strings.HasPrefix(s[i:], refOpen):
			end := strings.Index(s[i+len(refOpen):], refClose)
			if end < 0 {
				return nil, fmt.Errorf("reference %q is not closed with }", clip(s[i:], 40))
			}
			inner := s[i+len(refOpen) : i+len(refOpen)+end]
			r, err := parseRef(inner)
			if err != nil {
				return nil, err
			}
			flush()
			out = append(out, part{r: &r})
			i += len(refOpen) + end + len(refClose)
		default:
			lit.WriteByte(s[i])
			i++
		}
	}
	flush()
	return out, nil
}

// parseRef parses what is between "${" and "}".
func parseRef(inner string) (ref, error) {
	if inner == nsInput {
		return ref{ns: nsInput}, nil
	}
	if rest, ok := strings.CutPrefix(inner, nsInput+"."); ok {
		path := strings.Split(rest, ".")
		for _, seg := range path {
			if !isPathSegment(seg) {
				return ref{}, fmt.Errorf("reference ${%s} has an empty or invalid path segment %q (segments are letters, digits, _ and -)", clip(inner, 60), seg)
			}
		}
		return ref{ns: nsInput, path: path}, nil
	}
	if name, ok := strings.CutPrefix(inner, nsEnv+"."); ok {
		if !isEnvName(name) {
			return ref{}, fmt.Errorf("reference ${%s}: an env name is letters, digits and _ and does not start with a digit", clip(inner, 60))
		}
		return ref{ns: nsEnv, name: name}, nil
	}
	return ref{}, fmt.Errorf("unknown reference ${%s}: write ${input}, ${input.path} or ${env.NAME} (and $${ for a literal ${)", clip(inner, 60))
}

// isPathSegment is [A-Za-z0-9_-]+.
func isPathSegment(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c == '_' || c == '-' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9') {
			return false
		}
	}
	return true
}

// isEnvName is [A-Za-z_][A-Za-z0-9_]*.
func isEnvName(s string) bool {
	if s == "" || s[0] >= '0' && s[0] <= '9' {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9') {
			return false
		}
	}
	return true
}

// arrayIndex reports whether seg is a decimal index (no sign, no leading
// zero) and its value.
func arrayIndex(seg string) (int, bool) {
	if seg == "" || len(seg) > 9 || (len(seg) > 1 && seg[0] == '0') {
		return 0, false
	}
	n, err := strconv.Atoi(seg)
	if err != nil || n < 0 {
		return 0, false
	}
	return n, true
}

// values are what references resolve from: the input (decoded with
// json.Number, so numbers keep the digits they were sent with) and the
// component's env (nil for a target without a component).
type values struct {
	input any
	env   map[string]string
}

// newValues decodes input (a JSON value; empty means {}) for resolution.
func newValues(input json.RawMessage, env map[string]string) (values, error) {
	v := values{env: env}
	if len(bytes.TrimSpace(input)) == 0 {
		v.input = map[string]any{}
		return v, nil
	}
	dec := json.NewDecoder(bytes.NewReader(input))
	dec.UseNumber()
	if err := dec.Decode(&v.input); err != nil {
		return values{}, apperr.Invalidf("the input is not valid JSON: %v", err)
	}
	return v, nil
}

// value resolves r. A path that does not exist in the input, or an env name
// the component does not declare, is a 400 naming the reference: seed 003
// fails the call rather than substitute an empty value.
func (v values) value(r ref) (any, error) {
	if r.ns == nsEnv {
		s, ok := v.env[r.name]
		if !ok {
			return nil, apperr.Invalidf("reference %s: the component declares no env variable %s", r, r.name)
		}
		return s, nil
	}
	cur := v.input
	for i, seg := range r.path {
		switch node := cur.(type) {
		case map[string]any:
			next, ok := node[seg]
			if !ok {
				return nil, missing(r, i)
			}
			cur = next
		case []any:
			n, ok := arrayIndex(seg)
			if !ok || n >= len(node) {
				return nil, missing(r, i)
			}
			cur = node[n]
		default:
			return nil, missing(r, i)
		}
	}
	return cur, nil
}

func missing(r ref, at int) error {
	return apperr.Invalidf("reference %s: the input has no %s", r, strings.Join(r.path[:at+1], "."))
}

// text renders a resolved value inside a longer string (or wherever only
// text fits: a URL, a query value, a header): a string as it is; any other
// value (number, boolean, null, object, array) as its compact JSON, numbers
// with the digits they were sent with and object keys sorted.
func text(val any) (string, error) {
	if s, ok := val.(string); ok {
		return s, nil
	}
	b, err := marshal(val)
	if err != nil {
		return "", err
	}
	return string(b), nil
}

// marshal is compact JSON without HTML escaping (a body is sent as the
// author wrote it, "<" and all).
func marshal(val any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(val); err != nil {
		return nil, fmt.Errorf("agenttool: encode a value: %w", err)
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}

// fill resolves a template to text, passing each resolved value through
// escape (nil: as it is); check, when set, may refuse a value.
func (t template) fill(v values, escape func(string) string, check func(r ref, s string) error) (string, error) {
	var b strings.Builder
	for _, p := range t {
		if p.r == nil {
			b.WriteString(p.text)
			continue
		}
		val, err := v.value(*p.r)
		if err != nil {
			return "", err
		}
		s, err := text(val)
		if err != nil {
			return "", err
		}
		if check != nil {
			if err := check(*p.r, s); err != nil {
				return "", err
			}
		}
		if escape != nil {
			s = escape(s)
		}
		b.WriteString(s)
	}
	return b.String(), nil
}

// resolveJSON fills the references in a JSON body template: every string
// value, at any depth, is a template; a string that is exactly one
// reference becomes the referenced value with its JSON type (so a body of
// "${input}" sends the input itself), any other string stays a string with
// its references rendered as text. Object keys are literal (never
// resolved, "$${" in them not unescaped). The result is compact JSON with
// object keys sorted.
func resolveJSON(body json.RawMessage, v values) (json.RawMessage, error) {
	doc, err := decodeBody(body)
	if err != nil {
		return nil, templateError("body", err)
	}
	out, err := mapStrings(doc, func(s string) (any, error) {
		t, err := parseTemplate(s)
		if err != nil {
			return nil, templateError("body", err)
		}
		if r, ok := t.whole(); ok {
			return v.value(*r)
		}
		return t.fill(v, nil, nil)
	})
	if err != nil {
		return nil, err
	}
	return marshal(out)
}

// jsonRefs returns the references of every string in a JSON body template,
// or an error for the first malformed one (the save-time check).
func jsonRefs(body json.RawMessage) ([]ref, error) {
	doc, err := decodeBody(body)
	if err != nil {
		return nil, fmt.Errorf("body is not valid JSON: %v", err)
	}
	var out []ref
	_, err = mapStrings(doc, func(s string) (any, error) {
		t, err := parseTemplate(s)
		if err != nil {
			return nil, err
		}
		out = append(out, t.refs()...)
		return s, nil
	})
	return out, err
}

// decodeBody decodes a body template, numbers as json.Number.
func decodeBody(body json.RawMessage) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	var doc any
	err := dec.Decode(&doc)
	return doc, err
}

// mapStrings returns node with every string value, at any depth, replaced
// by what f makes of it; object keys and other values are kept.
func mapStrings(node any, f func(string) (any, error)) (any, error) {
	switch n := node.(type) {
	case string:
		return f(n)
	case map[string]any:
		out := make(map[string]any, len(n))
		for k, child := range n {
			r, err := mapStrings(child, f)
			if err != nil {
				return nil, err
			}
			out[k] = r
		}
		return out, nil
	case []any:
		out := make([]any, len(n))
		for i, child := range n {
			r, err := mapStrings(child, f)
			if err != nil {
				return nil, err
			}
			out[i] = r
		}
		return out, nil
	}
	return node, nil
}

func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}

// templateError reports a template that the save-time checks should have
// refused: the caller cannot fix it, so it is not a 400.
func templateError(where string, err error) error {
	return apperr.Wrap(err, apperr.Internal, "the target's %s is not a valid template", where)
}
