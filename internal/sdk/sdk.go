// Package sdk serves the bundle SDK, /sdk/appruntime.js: one small,
// dependency-free ES module a bundle imports to speak the App Tool contract
// (the ready/init handshake, the runtime verbs with the v2 envelope, typed
// errors, Retry-After backoff, session renewal through the host, and the
// bridge messages). docs/bundle-authors.md#the-bundle-sdk documents it. Its
// source is the npm package in sdk/ (github.com/appruntime/appruntime/sdk),
// served byte for byte.
package sdk

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"net/http"
	"time"

	bundlesdk "github.com/appruntime/appruntime/sdk"
)

// Path is where the API serves the SDK.
const Path = "/sdk/appruntime.js"

// ContentType is what the SDK is served as: a JavaScript module.
const ContentType = "text/javascript; charset=utf-8"

// CacheControl lets browsers and CDNs keep the SDK for five minutes, then
// revalidate it by its ETag: the URL carries no version, so a deployment's
// new SDK reaches every bundle within minutes, and an unchanged one costs a
// 304.
const CacheControl = "public, max-age=300, must-revalidate"

// source is the npm package's appruntime.js, the one source of the SDK.
var source = bundlesdk.Source()

var sum = sha256.Sum256(source)

// SHA256 is the hex sha256 of the SDK's bytes.
func SHA256() string { return hex.EncodeToString(sum[:]) }

// ETag is the SDK's strong entity tag: its sha256, quoted.
func ETag() string { return `"` + SHA256() + `"` }

// Source returns a copy of the SDK's bytes.
func Source() []byte { return bytes.Clone(source) }

// Handler serves the SDK on GET and HEAD with its ETag (a matching
// If-None-Match is a bodiless 304), CacheControl, and
// Access-Control-Allow-Origin "*": a bundle runs in an iframe sandboxed
// without allow-same-origin, whose opaque origin fetches a module with CORS.
// Mount it at Path (on Fiber through the adaptor middleware).
func Handler() http.Handler {
	etag := ETag()
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			w.Header().Set("Allow", "GET, HEAD")
			http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
			return
		}
		h := w.Header()
		h.Set("Content-Type", ContentType)
		h.Set("ETag", etag)
		h.Set("Cache-Control", CacheControl)
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("Access-Control-Allow-Origin", "*")
		h.Set("Cross-Origin-Resource-Policy", "cross-origin")
		// ServeContent answers If-None-Match (304), HEAD and ranges.
		http.ServeContent(w, r, "appruntime.js", time.Time{}, bytes.NewReader(source))
	})
}
