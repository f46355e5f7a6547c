package bundle

import (
	"net/url"
	"strings"

	"github.com/appruntime/appruntime/models"
)

// RuntimeAPIPath is the base path of the runtime verbs, the one API a bundle calls.
const RuntimeAPIPath = "/api/app-runtime/"

// SDKPath is where the API serves the bundle SDK (internal/sdk), the one
// script a bundle may load from the API.
const SDKPath = "/sdk/"

// CacheControl lets browsers and CDNs keep a version for a year: a version's
// bytes never change, a new upload is a new version with a new URL.
const CacheControl = "public, max-age=31536000, immutable"

// ContentSecurityPolicy is the policy a bundle is served under. A bundle runs
// in an iframe sandboxed to allow-scripts and may only call the runtime API:
//   - scripts and styles: inline (that is how bundles are written) or from
//     the bundle origin (an HTML bundle may load a JS bundle); scripts also
//     from the API's SDKPath (the bundle SDK);
//   - images: inline (data:, blob:) or from the bundle origin; fonts only
//     from the bundle origin;
//   - connect-src: the runtime API of publicAPIURL, nothing else;
//   - no frames, workers, plugins, media, manifests, <base>, form posts;
//   - sandbox allow-scripts, so that opening the URL directly (outside the
//     host's iframe) still gives the document an opaque origin.
func ContentSecurityPolicy(publicAPIURL, bundleBaseURL string) string {
	self := "'self'"
	if o := origin(bundleBaseURL); o != "" {
		self += " " + o
	}
	connect, scripts := "'none'", self+" 'unsafe-inline'"
	if api := strings.TrimRight(publicAPIURL, "/"); api != "" {
		connect = api + RuntimeAPIPath
		scripts += " " + api + SDKPath
	}
	return strings.Join([]string{
		"default-src 'none'",
		"script-src " + scripts,
		"style-src " + self + " 'unsafe-inline'",
		"img-src " + self + " data: blob:",
		"font-src " + self,
		"connect-src " + connect,
		"frame-src 'none'",
		"child-src 'none'",
		"worker-src 'none'",
		"object-src 'none'",
		"media-src 'none'",
		"manifest-src 'none'",
		"base-uri 'none'",
		"form-action 'none'",
		"sandbox allow-scripts",
	}, "; ")
}

// origin returns scheme://host[:port] of raw, or "" when it has none.
func origin(raw string) string {
	u, err := url.Parse(raw)
	if err != nil || u.Scheme == "" || u.Host == "" {
		return ""
	}
	return u.Scheme + "://" + u.Host
}

// ETag is the entity tag of a version: its sha256, quoted as HTTP wants.
func ETag(b models.Bundle) string { return `"` + b.SHA256 + `"` }

// Headers returns the response headers a version is served with.
func (s *Service) Headers(b models.Bundle) [][2]string {
	return [][2]string{
		{"Content-Type", b.ContentType},
		{"ETag", ETag(b)},
		{"Cache-Control", CacheControl},
		{"X-Content-Type-Options", "nosniff"},
		{"Content-Security-Policy", s.csp},
		{"Referrer-Policy", "no-referrer"},
	}
}

// NotModified reports whether an If-None-Match header already names the
// version, so the reply can be a bodiless 304.
func NotModified(ifNoneMatch string, b models.Bundle) bool {
	if ifNoneMatch == "" {
		return false
	}
	tag := ETag(b)
	for _, t := range strings.Split(ifNoneMatch, ",") {
		t = strings.TrimPrefix(strings.TrimSpace(t), "W/")
		if t == tag || t == "*" {
			return true
		}
	}
	return false
}
