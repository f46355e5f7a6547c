package placeholder

import (
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/appruntime/appruntime/internal/apperr"
)

// SessionKeys are the values a session always supplies; a payload can never
// supply or override them.
var SessionKeys = []string{"task_id", "agent_id", "step_id", "workspace_id"}

// IsSessionKey reports whether name is one of SessionKeys.
func IsSessionKey(name string) bool { return slices.Contains(SessionKeys, name) }

// piece is a run of literal text, or one placeholder when name is set.
type piece struct {
	text string
	name string
}

// parse splits s into literal runs and placeholders, or returns an error
// quoting the first malformed placeholder ("{{ name }}", "{{1x}}", an
// unclosed "{{").
func parse(s string) ([]piece, error) {
	var out []piece
	for i := 0; ; {
		j := strings.Index(s[i:], "{{")
		if j < 0 {
			if i < len(s) {
				out = append(out, piece{text: s[i:]})
			}
			return out, nil
		}
		start := i + j
		if start > i {
			out = append(out, piece{text: s[i:start]})
		}
		k := strings.Index(s[start+2:], "}}")
		if k < 0 {
			return nil, fmt.Errorf("placeholder %q is not closed with }}", clip(s[start:], 40))
		}
		name := s[start+2 : start+2+k]
		if !isName(name) {
			return nil, fmt.Errorf("malformed placeholder %q: write {{name}} with letters, digits and _ (not starting with a digit, no spaces)",
				clip(s[start:start+k+4], 60))
		}
		out = append(out, piece{name: name})
		i = start + k + 4
	}
}

// isName is the rule for the name inside {{…}}: [A-Za-z_][A-Za-z0-9_]*.
func isName(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '_', c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z':
		case c >= '0' && c <= '9' && i > 0:
		default:
			return false
		}
	}
	return true
}

func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}

// Names returns the names of the {{name}} placeholders in s, in order, or an
// error quoting the first malformed one.
func Names(s string) ([]string, error) {
	pieces, err := parse(s)
	if err != nil {
		return nil, err
	}
	var names []string
	for _, p := range pieces {
		if p.name != "" {
			names = append(names, p.name)
		}
	}
	return names, nil
}

// IsWhole reports whether s is exactly one placeholder, and its name.
func IsWhole(s string) (string, bool) {
	if len(s) < 5 || !strings.HasPrefix(s, "{{") || !strings.HasSuffix(s, "}}") {
		return "", false
	}
	name := s[2 : len(s)-2]
	if !isName(name) {
		return "", false
	}
	return name, true
}

// FillSession fills s from session values only: a placeholder whose name is
// not a key of session is an error, so a bundle can never supply the value
// (fixed filters and fixed values of reads and writes).
func FillSession(s string, session map[string]string) (string, error) {
	if !strings.Contains(s, "{{") {
		return s, nil
	}
	pieces, err := parse(s)
	if err != nil {
		return "", err
	}
	var b strings.Builder
	for _, p := range pieces {
		if p.name == "" {
			b.WriteString(p.text)
			continue
		}
		v, ok := session[p.name]
		if !ok {
			return "", fmt.Errorf("{{%s}} is not a session value", p.name)
		}
		b.WriteString(v)
	}
	return b.String(), nil
}

// Source is where placeholder values come from: SessionKeys from Session
// only, every other name from Payload.
type Source struct {
	Session map[string]string
	Payload map[string]any
}

// lookup returns the value of name and whether it is present.
func (s Source) lookup(name string) (any, bool) {
	if IsSessionKey(name) {
		v, ok := s.Session[name]
		return v, ok
	}
	v, ok := s.Payload[name]
	return v, ok
}

// value returns the value of name, or a 400 when it is absent.
func (s Source) value(name string) (any, error) {
	v, ok := s.lookup(name)
	if !ok {
		if IsSessionKey(name) {
			return nil, apperr.Invalidf("{{%s}} has no session value", name)
		}
		return nil, apperr.Invalidf("{{%s}} is not in the payload", name)
	}
	return v, nil
}

// text returns the value of name as text: a string as it is, a number or
// boolean as JSON writes it, null as "". An object or array is a 400: it has
// no one text form in a URL or a header.
func (s Source) text(name string) (string, error) {
	v, err := s.value(name)
	if err != nil {
		return "", err
	}
	switch x := v.(type) {
	case nil:
		return "", nil
	case string:
		return x, nil
	case json.Number:
		return x.String(), nil
	case bool:
		return strconv.FormatBool(x), nil
	case float64:
		return strconv.FormatFloat(x, 'f', -1, 64), nil
	case int:
		return strconv.Itoa(x), nil
	case int64:
		return strconv.FormatInt(x, 10), nil
	}
	return "", apperr.Invalidf("{{%s}} must be a string, number or boolean here", name)
}

// templateError reports a template the binding's save-time checks should
// have refused: the bundle cannot fix it, so it is not a 400.
func templateError(where string, err error) error {
	return apperr.Wrap(err, apperr.Internal, "the binding's %s is not a valid template", where)
}

// fillTemplate parses and fills tmpl, a template of the binding's where.
func fillTemplate(tmpl, where string, src Source, escape func(string) string, check func(name, value string) error) (string, error) {
	if !strings.Contains(tmpl, "{{") {
		return tmpl, nil
	}
	pieces, err := parse(tmpl)
	if err != nil {
		return "", templateError(where, err)
	}
	return fill(pieces, src, escape, check)
}

// fill fills a parsed template, passing each value through escape; check,
// when set, may refuse a value.
func fill(pieces []piece, src Source, escape func(string) string, check func(name, value string) error) (string, error) {
	var b strings.Builder
	for _, p := range pieces {
		if p.name == "" {
			b.WriteString(p.text)
			continue
		}
		v, err := src.text(p.name)
		if err != nil {
			return "", err
		}
		if check != nil {
			if err := check(p.name, v); err != nil {
				return "", err
			}
		}
		if escape != nil {
			v = escape(v)
		}
		b.WriteString(v)
	}
	return b.String(), nil
}

// Text fills tmpl with the values as they are, unescaped: for the values of
// an http_call's query map, which the caller encodes as a whole. An empty
// value is allowed ("?q=" means no filter).
func Text(tmpl string, src Source) (string, error) {
	return fillTemplate(tmpl, "query", src, nil, nil)
}

// Header fills a header value. A value holding a control character (CR, LF,
// NUL, …; a tab is allowed) is a 400: it would end the header and start
// another.
func Header(tmpl string, src Source) (string, error) {
	return fillTemplate(tmpl, "header", src, nil, func(name, v string) error {
		if HasControl(v, true) {
			return apperr.Invalidf("{{%s}} holds a control character (CR, LF, …), which a header value cannot carry", name)
		}
		return nil
	})
}

// HasControl reports whether s holds an ASCII control character (DEL
// included); a tab counts only when tabOK is false.
func HasControl(s string, tabOK bool) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if (c < 0x20 && (c != '\t' || !tabOK)) || c == 0x7f {
			return true
		}
	}
	return false
}
