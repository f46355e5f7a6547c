package bundle

import (
	"crypto/sha256"
	"encoding/hex"
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
	return ContentSecurityPolicyWith(publicAPIURL, bundleBaseURL, Grants{})
}

// ContentSecurityPolicyWith is ContentSecurityPolicy widened by exactly the
// approved grants g (docs/bundle-authors.md#declaring-network-grants):
// connect domains join connect-src (beside the runtime API), resource
// domains join script-src, style-src, img-src and font-src, and frame
// domains become frame-src. g's origins are canonical (CheckGrants), so
// they cannot carry a directive of their own.
func ContentSecurityPolicyWith(publicAPIURL, bundleBaseURL string, g Grants) string {
	self := "'self'"
	if o := origin(bundleBaseURL); o != "" {
		self += " " + o
	}
	var connect []string
	scripts := self + " 'unsafe-inline'"
	if api := strings.TrimRight(publicAPIURL, "/"); api != "" {
		connect = append(connect, api+RuntimeAPIPath)
		scripts += " " + api + SDKPath
	}
	connect = append(connect, g.ConnectDomains...)
	resources := ""
	if len(g.ResourceDomains) > 0 {
		resources = " " + strings.Join(g.ResourceDomains, " ")
	}
	return strings.Join([]string{
		"default-src 'none'",
		"script-src " + scripts + resources,
		"style-src " + self + " 'unsafe-inline'" + resources,
		"img-src " + self + " data: blob:" + resources,
		"font-src " + self + resources,
		"connect-src " + sourceList(connect),
		"frame-src " + sourceList(g.FrameDomains),
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

// sourceList is a directive's sources, 'none' when there are none.
func sourceList(sources []string) string {
	if len(sources) == 0 {
		return "'none'"
	}
	return strings.Join(sources, " ")
}

// origin returns scheme://host[:port] of raw, or "" when it has none.
func origin(raw string) string {
	u, err := url.Parse(raw)
	if err != nil || u.Scheme == "" || u.Host == "" {
		return ""
	}
	return u.Scheme + "://" + u.Host
}

// ETag is the entity tag of a version without a declaration: its sha256,
// quoted as HTTP wants.
func ETag(b models.Bundle) string { return `"` + b.SHA256 + `"` }

// RevalidateCacheControl is how a version that declares network grants is
// cached: its policy changes when an admin decides, so every use revalidates
// (the ETag names the policy as well as the bytes).
const RevalidateCacheControl = "no-cache"

// Served is a version as the serving route answers it.
type Served struct {
	Bundle  models.Bundle
	Content []byte
	// Grant is the version's declaration and its state; nil when the
	// version declares nothing.
	Grant *Grant
	// CSP is the policy it is served under: the default one, widened by
	// the declaration when that is approved.
	CSP string
}

// ETag is the entity tag v is served with: the sha256 of the bytes, and for
// a version with a declaration also a digest of the policy, so a cache
// never pairs the bytes with a policy from before a decision.
func (v Served) ETag() string {
	if v.Grant == nil {
		return ETag(v.Bundle)
	}
	sum := sha256.Sum256([]byte(v.CSP))
	return `"` + v.Bundle.SHA256 + "." + hex.EncodeToString(sum[:8]) + `"`
}

// Headers returns the response headers v is served with: immutable caching
// for a version without a declaration, revalidation for one with.
func (s *Service) Headers(v Served) [][2]string {
	cache := CacheControl
	if v.Grant != nil {
		cache = RevalidateCacheControl
	}
	return [][2]string{
		{"Content-Type", v.Bundle.ContentType},
		{"ETag", v.ETag()},
		{"Cache-Control", cache},
		{"X-Content-Type-Options", "nosniff"},
		{"Content-Security-Policy", v.CSP},
		{"Referrer-Policy", "no-referrer"},
	}
}

// NotModified reports whether an If-None-Match header already names etag,
// so the reply can be a bodiless 304.
func NotModified(ifNoneMatch, etag string) bool {
	if ifNoneMatch == "" {
		return false
	}
	for _, t := range strings.Split(ifNoneMatch, ",") {
		t = strings.TrimPrefix(strings.TrimSpace(t), "W/")
		if t == etag || t == "*" {
			return true
		}
	}
	return false
}
