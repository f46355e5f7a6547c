package bindingspec

import (
	"errors"
	"fmt"
	"net/url"
	"strings"

	"github.com/appruntime/appruntime/internal/placeholder"
)

// SessionPlaceholders are the values a session always supplies and a bundle
// can never override; fixed filters and fixed values may use only these.
var SessionPlaceholders = placeholder.SessionKeys

// placeholders returns the names of the {{name}} placeholders in s, in order,
// or an error quoting the first malformed one ("{{ name }}", "{{1x}}", an
// unclosed "{{"): the grammar of internal/placeholder, which fills them.
func placeholders(s string) ([]string, error) { return placeholder.Names(s) }

// placeholderList writes names as placeholders: "{{a}}, {{b}}".
func placeholderList(names []string) string { return placeholder.List(names) }

// errNotHTTP and errNoHost are URL refusals reported with the entry's label.
var (
	errNotHTTP = errors.New("must be an absolute http or https URL")
	errNoHost  = errors.New("has no host")
)

// checkCallURL applies the rules of an http_call's url: an absolute http(s)
// URL whose authority is literal except for at most one placeholder filling
// exactly one whole DNS label of the host, followed by at least two literal
// labels, so that the value never chooses the registrable domain
// (docs/architecture.md#1-host-placeholders). Placeholders elsewhere (path, query) must be
// well-formed.
func checkCallURL(raw string) error {
	if raw == "" {
		return errors.New("url is required")
	}
	if _, err := placeholders(raw); err != nil {
		return fmt.Errorf("url: %w", err)
	}
	scheme, rest, ok := strings.Cut(raw, "://")
	if !ok || !isHTTPScheme(scheme) {
		return fmt.Errorf("url %q %w", raw, errNotHTTP)
	}
	authority := rest
	if i := strings.IndexAny(rest, "/?#"); i >= 0 {
		authority = rest[:i]
	}
	if authority == "" {
		return fmt.Errorf("url %q %w", raw, errNoHost)
	}
	if strings.Contains(authority, "@") {
		return fmt.Errorf("url %q carries userinfo; credentials belong in the integration, and a placeholder may not sit there", raw)
	}
	host, port := placeholder.SplitHostPort(authority)
	if strings.Contains(port, "{{") {
		return fmt.Errorf("url %q has a placeholder in the port; the port is literal", raw)
	}
	sample := raw
	if strings.Contains(host, "{{") {
		labels := strings.Split(host, ".")
		at := -1
		for i, l := range labels {
			if !strings.Contains(l, "{{") {
				continue
			}
			if _, whole := placeholder.IsWhole(l); !whole {
				return fmt.Errorf("url %q has a placeholder in part of a host label; a placeholder must be one whole DNS label (https://{{tenant}}.example.com/...)", raw)
			}
			if at >= 0 {
				return fmt.Errorf("url %q has more than one placeholder in the host; at most one DNS label may be a placeholder", raw)
			}
			at = i
		}
		if len(labels)-at-1 < 2 {
			return fmt.Errorf("url %q lets a placeholder choose the whole host or its domain; a placeholder may fill one DNS label followed by a literal domain (https://{{tenant}}.example.com/...)", raw)
		}
		labels[at] = "tenant"
		sample = scheme + "://" + strings.Join(labels, ".") + port + rest[len(authority):]
	}
	u, err := url.Parse(sample)
	if err != nil || u.Host == "" || u.Hostname() == "" {
		return fmt.Errorf("url %q is not a valid URL", raw)
	}
	return nil
}

func isHTTPScheme(s string) bool {
	return strings.EqualFold(s, "http") || strings.EqualFold(s, "https")
}

// checkLiteralURL is for token URLs: absolute http(s), no placeholders at all.
func checkLiteralURL(raw string) error {
	if strings.Contains(raw, "{{") {
		return fmt.Errorf("%q may not hold placeholders", raw)
	}
	u, err := url.Parse(raw)
	if err != nil || !isHTTPScheme(u.Scheme) || u.Host == "" || u.Hostname() == "" {
		return fmt.Errorf("%q %w", raw, errNotHTTP)
	}
	if u.User != nil {
		return fmt.Errorf("%q carries userinfo; credentials belong in the integration", raw)
	}
	return nil
}
