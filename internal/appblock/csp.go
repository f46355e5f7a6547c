package appblock

import "strings"

// AssetCSP is the content security policy an asset is served under, its
// own (the frame loads the asset by URL, so it does not inherit the host
// page's policy as an srcdoc frame would; seed 004, "Trust and
// visibility"):
//
//   - default-src 'none': nothing loads that a directive below does not
//     allow;
//   - scripts and styles inline only ('unsafe-inline'; no eval, no URL):
//     an asset is one self-contained HTML file;
//   - images inline only: data: and blob: URLs, nothing fetched;
//   - fonts: font-src 'none'. A font can be inline only as a data: URL,
//     which seed 004 forbids ("no data: fonts"), or as bytes given to the
//     FontFace API in a script, which fetches nothing; anything else uses
//     the system's fonts;
//   - connect-src 'none': no fetch, XHR, WebSocket, EventSource or beacon;
//   - no frames, workers, objects, media, manifests, <base>, form posts,
//     and no navigation of the frame elsewhere is possible through forms;
//   - sandbox allow-scripts: opened directly (not in the host's frame) the
//     document still has an opaque origin and cannot open windows, navigate
//     the top page or reach cookies and storage;
//   - frame-ancestors: only the host pages (frameAncestors, origins such as
//     https://console.example.com) may frame it; none given means 'none'.
func AssetCSP(frameAncestors ...string) string {
	ancestors := "'none'"
	if len(frameAncestors) > 0 {
		ancestors = strings.Join(frameAncestors, " ")
	}
	return strings.Join([]string{
		"default-src 'none'",
		"script-src 'unsafe-inline'",
		"style-src 'unsafe-inline'",
		"img-src data: blob:",
		"font-src 'none'",
		"connect-src 'none'",
		"frame-src 'none'",
		"child-src 'none'",
		"worker-src 'none'",
		"object-src 'none'",
		"media-src 'none'",
		"manifest-src 'none'",
		"base-uri 'none'",
		"form-action 'none'",
		"frame-ancestors " + ancestors,
		"sandbox allow-scripts",
	}, "; ")
}

// AssetHeaders are the response headers an asset is served with: its one
// type, the policy, no sniffing, no referrer, and no caching by shared
// caches (an asset is an agent's, served to whoever may see its task).
func AssetHeaders(frameAncestors ...string) [][2]string {
	return [][2]string{
		{"Content-Type", AssetContentType},
		{"Content-Security-Policy", AssetCSP(frameAncestors...)},
		{"X-Content-Type-Options", "nosniff"},
		{"Referrer-Policy", "no-referrer"},
		{"Cache-Control", "private, max-age=300"},
		{"Cross-Origin-Resource-Policy", "same-site"},
	}
}
