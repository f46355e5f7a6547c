package api

import (
	"bytes"
	"strings"

	"github.com/gofiber/fiber/v2"

	"github.com/appruntime/appruntime/internal/apperr"
	"github.com/appruntime/appruntime/internal/artifact"
	"github.com/appruntime/appruntime/internal/files"
	"github.com/appruntime/appruntime/internal/runtime"
	"github.com/appruntime/appruntime/internal/web"
)

// Every API route authenticates its caller before it reads the body
// (web.Options.BodyAfterAuth; requireToken and requireSession call
// web.ReadBody), so an anonymous caller's body is never read. These are the
// caps the bodies are read under.

// bundleUploadsPath is where bundles are uploaded (POST, and POST
// <id>/versions): the one place a body may be megabytes.
const bundleUploadsPath = "/api/admin/bundles"

// bodyLimit is the most bytes a request's body may carry: 256 KiB on the
// runtime verbs (seed 000), web.MaxUploadBytes on bundle and asset uploads,
// maxReplyBodyBytes on agent replies, and
// web.DefaultMaxBodyBytes everywhere else.
func bodyLimit(c *fiber.Ctx) int {
	path := c.Path()
	switch {
	case hasPrefixFold(path, artifact.RuntimePath+"/"):
		return runtime.MaxBodyBytes
	case c.Method() == fiber.MethodPost && (isBundleUpload(path) || strings.EqualFold(strings.TrimSuffix(path, "/"), assetUploadPath)):
		return web.MaxUploadBytes
	case c.Method() == fiber.MethodPost && hasPrefixFold(path, "/api/agent/tasks/") && hasSuffixFold(strings.TrimSuffix(path, "/"), "/replies"):
		return maxReplyBodyBytes
	case c.Method() == fiber.MethodPost && isFileUpload(path):
		return files.MaxFileBytes + fileUploadFraming
	}
	return web.DefaultMaxBodyBytes
}

// fileUploadFraming is what a multipart upload carries besides its file.
const fileUploadFraming = 64 << 10

// isFileUpload reports whether path is /api/agent/tasks/<id>/files, whose
// handler streams the body itself (uploadAgentTaskFile).
func isFileUpload(path string) bool {
	rest, ok := strings.CutPrefix(strings.ToLower(strings.TrimSuffix(path, "/")), "/api/agent/tasks/")
	if !ok {
		return false
	}
	id, tail, _ := strings.Cut(rest, "/")
	return id != "" && tail == "files"
}

// isBundleUpload reports whether path is /api/admin/bundles or
// /api/admin/bundles/<id>/versions (routes match case-insensitively, with
// or without a trailing slash).
func isBundleUpload(path string) bool {
	path = strings.TrimSuffix(path, "/")
	if strings.EqualFold(path, bundleUploadsPath) {
		return true
	}
	if !hasPrefixFold(path, bundleUploadsPath+"/") {
		return false
	}
	id, rest, ok := strings.Cut(path[len(bundleUploadsPath)+1:], "/")
	return ok && id != "" && strings.EqualFold(rest, "versions")
}

func hasSuffixFold(s, suffix string) bool {
	return len(s) >= len(suffix) && strings.EqualFold(s[len(s)-len(suffix):], suffix)
}

func hasPrefixFold(s, prefix string) bool {
	return len(s) >= len(prefix) && strings.EqualFold(s[:len(prefix)], prefix)
}

// requireJSON answers 415 for a runtime verb whose body is not declared
// application/json (a charset parameter may follow). It looks at the header
// only, before the body is read.
func requireJSON(c *fiber.Ctx) error {
	ct := c.Request().Header.ContentType()
	if i := bytes.IndexByte(ct, ';'); i >= 0 {
		ct = ct[:i]
	}
	if !bytes.EqualFold(bytes.TrimSpace(ct), jsonMediaType) {
		return apperr.New(apperr.UnsupportedMedia, "Content-Type must be application/json")
	}
	return c.Next()
}

var jsonMediaType = []byte(fiber.MIMEApplicationJSON)
