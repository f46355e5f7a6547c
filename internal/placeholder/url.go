package placeholder

import (
	"errors"
	"net/url"
	"strings"

	"github.com/appruntime/appruntime/internal/apperr"
)

// MaxHostLabel is the longest DNS label (RFC 1035).
const MaxHostLabel = 63

// MinDomainAfterPlaceholder is how many literal labels must follow a host
// placeholder, so that a value never chooses the registrable domain
// (docs/architecture.md#1-host-placeholders; the binding's save-time check is the same).
const MinDomainAfterPlaceholder = 2

// maxDecodeRounds bounds how many times a path value is percent-decoded when
// looking for what a server that decodes more than once would see.
const maxDecodeRounds = 4

// URL fills an http_call's url. The template's scheme, authority, path
// segments, query keys and fragment stay as authored; values are escaped
// for where they sit:
//
//   - the host: a placeholder must be one whole DNS label followed by at
//     least two literal labels, and its value must satisfy HostLabel as
//     given, before any normalisation, else 403;
//   - the path: a value is one segment, every byte but A-Z a-z 0-9 - . _ ~
//     percent-encoded; an empty value is 400; a segment that is, or after
//     repeated percent-decoding contains, a "." or ".." segment or a control
//     character is 403, since it would address another resource;
//   - the query and the fragment: a value is query-escaped (so "&", "=" and
//     "#" stay inside it); an empty value is allowed.
func URL(tmpl string, src Source) (string, error) {
	if _, err := parse(tmpl); err != nil {
		return "", templateError("url", err)
	}
	scheme, rest, ok := strings.Cut(tmpl, "://")
	if !ok || strings.Contains(scheme, "{{") {
		return "", templateError("url", errors.New("no literal scheme"))
	}
	end := strings.IndexAny(rest, "/?#")
	if end < 0 {
		end = len(rest)
	}
	authority, tail := rest[:end], rest[end:]
	fragment := ""
	if i := strings.IndexByte(tail, '#'); i >= 0 {
		tail, fragment = tail[:i], tail[i:]
	}
	path, query := tail, ""
	if i := strings.IndexByte(tail, '?'); i >= 0 {
		path, query = tail[:i], tail[i:]
	}

	host, err := fillAuthority(authority, src)
	if err != nil {
		return "", err
	}
	if path, err = fillPath(path, src); err != nil {
		return "", err
	}
	if query, err = fillQuery(query, src); err != nil {
		return "", err
	}
	if fragment, err = fillQuery(fragment, src); err != nil {
		return "", err
	}
	return scheme + "://" + host + path + query + fragment, nil
}

// HostLabel reports whether s is one lower-case DNS label that a host
// placeholder may fill: ^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$, and not a
// reserved "??--" label such as an IDNA "xn--" one, whose decoded form is
// exactly the look-alike this rule keeps out. Nothing is normalised first,
// so upper case, full-width dots (U+FF0E) and other look-alikes fail.
func HostLabel(s string) bool {
	if s == "" || len(s) > MaxHostLabel || s[0] == '-' || s[len(s)-1] == '-' {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if (c < 'a' || c > 'z') && (c < '0' || c > '9') && c != '-' {
			return false
		}
	}
	return len(s) < 4 || s[2:4] != "--"
}

// fillAuthority fills the one host label a template may leave to a value.
// Anything else in the authority (userinfo, the port, part of a label, an IP
// literal) is literal, and a template that says otherwise is refused.
func fillAuthority(authority string, src Source) (string, error) {
	if !strings.Contains(authority, "{{") {
		return authority, nil
	}
	if strings.Contains(authority, "@") {
		return "", apperr.Forbiddenf("the url carries userinfo; a value may not reach it")
	}
	host, port := SplitHostPort(authority)
	if strings.Contains(port, "{{") || strings.HasPrefix(host, "[") {
		return "", apperr.Forbiddenf("the url has a placeholder outside a host label; the port and IP literals are literal")
	}
	labels := strings.Split(host, ".")
	at := -1
	for i, l := range labels {
		if !strings.Contains(l, "{{") {
			continue
		}
		if _, whole := IsWhole(l); !whole || at >= 0 {
			return "", apperr.Forbiddenf("the url's host may hold one placeholder, filling one whole DNS label")
		}
		at = i
	}
	if len(labels)-at-1 < MinDomainAfterPlaceholder {
		return "", apperr.Forbiddenf("the url lets a value choose the host's domain; a placeholder may fill one label before a literal domain")
	}
	name, _ := IsWhole(labels[at])
	v, err := src.text(name)
	if err != nil {
		return "", err
	}
	if !HostLabel(v) {
		return "", apperr.Forbiddenf("{{%s}} must be one DNS label (a-z, 0-9 and inner -, at most %d characters) to fill the host; the host stays the one the binding names",
			name, MaxHostLabel)
	}
	labels[at] = v
	return strings.Join(labels, ".") + port, nil
}

// SplitHostPort splits a URL authority (without userinfo) into its host and
// ":port" (kept with its colon, empty when absent), minding bracketed IPv6
// literals. Unlike net.SplitHostPort it accepts a host without a port.
func SplitHostPort(authority string) (host, port string) {
	if strings.HasPrefix(authority, "[") {
		if i := strings.Index(authority, "]"); i >= 0 {
			return authority[:i+1], authority[i+1:]
		}
		return authority, ""
	}
	if i := strings.LastIndex(authority, ":"); i >= 0 {
		return authority[:i], authority[i:]
	}
	return authority, ""
}

// fillPath fills the path segment by segment: a value never adds a "/".
func fillPath(path string, src Source) (string, error) {
	if !strings.Contains(path, "{{") {
		return path, nil
	}
	segments := strings.Split(path, "/")
	for i, seg := range segments {
		if !strings.Contains(seg, "{{") {
			continue
		}
		pieces, _ := parse(seg)
		var names []string
		filled, err := fill(pieces, src, EscapeSegment, func(name, v string) error {
			names = append(names, name)
			if v == "" {
				return apperr.Invalidf("{{%s}} is empty; in the path an empty value would address another endpoint", name)
			}
			return nil
		})
		if err != nil {
			return "", err
		}
		if !StaysOneSegment(filled) {
			return "", apperr.Forbiddenf("%s would leave its path segment (a . or .. segment, or a control character, once decoded)",
				List(names))
		}
		segments[i] = filled
	}
	return strings.Join(segments, "/"), nil
}

// StaysOneSegment reports whether a filled segment, decoded once and then
// again as often as a careless server might, never is or holds a "." or ".."
// segment (with / or \ as separators) and never holds a control character.
func StaysOneSegment(seg string) bool {
	s := seg
	for range maxDecodeRounds {
		d, err := url.PathUnescape(s)
		if err != nil {
			return true // not decodable any further: what was seen so far passed
		}
		if HasControl(d, false) {
			return false
		}
		for _, part := range strings.FieldsFunc(d, func(r rune) bool { return r == '/' || r == '\\' }) {
			if part == "." || part == ".." {
				return false
			}
		}
		if d == s {
			return true
		}
		s = d
	}
	return true
}

// List writes names as placeholders: "{{a}}, {{b}}".
func List(names []string) string {
	out := make([]string, len(names))
	for i, n := range names {
		out[i] = "{{" + n + "}}"
	}
	return strings.Join(out, ", ")
}

// fillQuery fills a query string or fragment (with its leading ? or #),
// query-escaping values: a value can add neither a parameter nor a fragment.
func fillQuery(s string, src Source) (string, error) {
	return fillTemplate(s, "url", src, url.QueryEscape, nil)
}

// EscapeSegment percent-encodes every byte of s except the unreserved
// characters of RFC 3986 (A-Z a-z 0-9 - . _ ~): stricter than
// url.PathEscape, which leaves sub-delimiters such as ";" and "=" that some
// servers give a meaning inside a segment.
func EscapeSegment(s string) string {
	const hex = "0123456789ABCDEF"
	n := 0
	for i := 0; i < len(s); i++ {
		if !unreserved(s[i]) {
			n++
		}
	}
	if n == 0 {
		return s
	}
	b := make([]byte, 0, len(s)+2*n)
	for i := 0; i < len(s); i++ {
		c := s[i]
		if unreserved(c) {
			b = append(b, c)
		} else {
			b = append(b, '%', hex[c>>4], hex[c&15])
		}
	}
	return string(b)
}

func unreserved(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '.' || c == '_' || c == '~'
}
