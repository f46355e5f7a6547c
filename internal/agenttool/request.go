package agenttool

import (
	"encoding/json"
	"net/http"
	"net/url"
	"sort"
	"strings"

	"github.com/appruntime/appruntime/internal/apperr"
	"github.com/appruntime/appruntime/internal/placeholder"
	"github.com/appruntime/appruntime/internal/strictjson"
)

// UserAgent is sent with every target request.
const UserAgent = "appruntime-agenttool/1"

// Outbound is a target's filled request, before the identity token.
type Outbound struct {
	Method string
	URL    string
	Header http.Header
	Body   []byte // nil: no body
}

// BuildRequest fills t's references from input and comp's env (comp is the
// app target's component, nil for a url target) in one pass and returns the
// request to send. Where a reference sits decides how its value is written
// (a string as it is, anything else as compact JSON, see text):
//
//   - in the path (an app target's path, a url target's path): the value
//     fills part of one segment, every byte but A-Z a-z 0-9 - . _ ~
//     percent-encoded; an empty value is a 400, and a segment that is or
//     decodes to "." or ".." a 403;
//   - in the url's query: query-escaped, so it cannot add a parameter;
//   - in query: the values are encoded as a whole, parameters sorted by name;
//   - in headers: a value holding a control character is a 400;
//   - in body: see resolveJSON (a string that is exactly one reference takes
//     the value's JSON type); the body is sent as application/json unless
//     the headers name another Content-Type.
//
// A reference to a path the input lacks, or to an env name the component
// does not declare, is a 400: nothing is sent.
func BuildRequest(t Target, input json.RawMessage, comp *Component) (Outbound, error) {
	if !t.IsHTTP() {
		return Outbound{}, apperr.New(apperr.Internal, "agenttool: %s is not an HTTP target", t)
	}
	var env map[string]string
	if t.Type == TargetApp {
		if comp == nil {
			return Outbound{}, apperr.New(apperr.Internal, "agenttool: an app target needs its component")
		}
		env = comp.Env
	}
	v, err := newValues(input, env)
	if err != nil {
		return Outbound{}, err
	}
	var u string
	if t.Type == TargetApp {
		path, err := fillPath(t.Path, v)
		if err != nil {
			return Outbound{}, err
		}
		u = comp.BaseURL + path
	} else if u, err = fillURL(t.URL, v); err != nil {
		return Outbound{}, err
	}
	if u, err = withQuery(u, t.Query, v); err != nil {
		return Outbound{}, err
	}
	out := Outbound{Method: t.Method, URL: u, Header: http.Header{}}
	for name, tmpl := range t.Headers {
		parsed, err := parseTemplate(tmpl)
		if err != nil {
			return Outbound{}, templateError("headers", err)
		}
		value, err := parsed.fill(v, nil, func(r ref, s string) error {
			if placeholder.HasControl(s, true) {
				return apperr.Invalidf("reference %s holds a control character (CR, LF, …), which a header value cannot carry", r)
			}
			return nil
		})
		if err != nil {
			return Outbound{}, err
		}
		out.Header.Set(name, value)
	}
	out.Header.Set("User-Agent", UserAgent)
	if !strictjson.IsNull(t.Body) {
		if out.Body, err = resolveJSON(t.Body, v); err != nil {
			return Outbound{}, err
		}
		if out.Header.Get("Content-Type") == "" {
			out.Header.Set("Content-Type", "application/json")
		}
	}
	return out, nil
}

// fillPath fills a path segment by segment: a value never adds a "/".
func fillPath(path string, v values) (string, error) {
	if !strings.Contains(path, refOpen) {
		return path, nil
	}
	segments := strings.Split(path, "/")
	for i, seg := range segments {
		if !strings.Contains(seg, "$") {
			continue
		}
		t, err := parseTemplate(seg)
		if err != nil {
			return "", templateError("path", err)
		}
		var names []string
		filled, err := t.fill(v, placeholder.EscapeSegment, func(r ref, s string) error {
			names = append(names, r.String())
			if s == "" {
				return apperr.Invalidf("reference %s is empty; in the path an empty value would address another endpoint", r)
			}
			return nil
		})
		if err != nil {
			return "", err
		}
		if !placeholder.StaysOneSegment(filled) {
			return "", apperr.Forbiddenf("%s would leave its path segment (a . or .. segment, or a control character, once decoded)",
				strings.Join(names, ", "))
		}
		segments[i] = filled
	}
	return strings.Join(segments, "/"), nil
}

// fillURL fills a url target's url: the origin is literal (checked at
// save), the path as fillPath, the query query-escaped.
func fillURL(raw string, v values) (string, error) {
	scheme, rest, _ := strings.Cut(raw, "://")
	end := strings.IndexAny(rest, "/?")
	if end < 0 {
		end = len(rest)
	}
	authority, tail := rest[:end], rest[end:]
	path, query, hasQuery := strings.Cut(tail, "?")
	path, err := fillPath(path, v)
	if err != nil {
		return "", err
	}
	out := scheme + "://" + authority + path
	if !hasQuery {
		return out, nil
	}
	t, err := parseTemplate(query)
	if err != nil {
		return "", templateError("url", err)
	}
	q, err := t.fill(v, url.QueryEscape, nil)
	if err != nil {
		return "", err
	}
	return out + "?" + q, nil
}

// withQuery appends the filled query parameters to u, sorted by name.
func withQuery(u string, query map[string]string, v values) (string, error) {
	if len(query) == 0 {
		return u, nil
	}
	names := make([]string, 0, len(query))
	for name := range query {
		names = append(names, name)
	}
	sort.Strings(names)
	var b strings.Builder
	for _, name := range names {
		t, err := parseTemplate(query[name])
		if err != nil {
			return "", templateError("query", err)
		}
		value, err := t.fill(v, nil, nil)
		if err != nil {
			return "", err
		}
		if b.Len() > 0 {
			b.WriteByte('&')
		}
		b.WriteString(url.QueryEscape(name) + "=" + url.QueryEscape(value))
	}
	sep := "?"
	if strings.Contains(u, "?") {
		sep = "&"
	}
	return u + sep + b.String(), nil
}
