package api

import (
	"strconv"

	"github.com/gofiber/fiber/v2"

	"github.com/appruntime/appruntime/internal/apperr"
	"github.com/appruntime/appruntime/internal/artifact"
	"github.com/appruntime/appruntime/internal/bundle"
	"github.com/appruntime/appruntime/models"
)

// bundleRoutes mounts the admin bundle API (/api/admin/bundles) and the
// public serving route GET /bundles/:id/:version, which takes no token: the
// sandboxed iframe cannot send one, and a version's URL names immutable bytes.
func (s *server) bundleRoutes(app *fiber.App) {
	adminOnly := s.requireToken(models.ScopeAdmin)
	app.Get("/api/admin/bundles", adminOnly, s.listBundles)
	app.Post("/api/admin/bundles", adminOnly, s.createBundle)
	app.Get("/api/admin/bundles/:id", adminOnly, s.getBundle)
	app.Delete("/api/admin/bundles/:id", adminOnly, s.deleteBundle)
	app.Post("/api/admin/bundles/:id/versions", adminOnly, s.addBundleVersion)
	app.Post("/api/admin/bundles/:id/versions/:version/grants/:decision", adminOnly, s.decideBundleGrant)
	app.Post("/api/admin/bundles/:id/versions/:version/preview-sessions", adminOnly, s.previewBundleVersion)
	app.Get("/bundles/:id/:version", s.serveBundle)
}

// uploadOf reads a bundle upload: the raw request body is the bundle, its
// Content-Type is the bundle's (text/html, text/javascript or
// application/javascript, UTF-8; any other type is a 400), ?name= names it,
// and ?connectDomains=, ?resourceDomains= and ?frameDomains= (each repeated
// or comma-separated) declare its network grants
// (docs/bundle-authors.md#declaring-network-grants).
func uploadOf(c *fiber.Ctx) bundle.Upload {
	return bundle.Upload{Name: c.Query("name"), ContentType: c.Get(fiber.HeaderContentType), Content: c.Body(), Grants: bundle.Grants{
		ConnectDomains:  queryList(c, bundle.ListConnect),
		ResourceDomains: queryList(c, bundle.ListResource),
		FrameDomains:    queryList(c, bundle.ListFrame),
	}}
}

// queryList reads a list query parameter, repeated or comma-separated.
func queryList(c *fiber.Ctx, name string) []string {
	var out []string
	for _, v := range c.Context().QueryArgs().PeekMulti(name) {
		out = append(out, bundle.SplitOrigins(string(v))...)
	}
	return out
}

func (s *server) listBundles(c *fiber.Ctx) error {
	list, err := s.Bundles.List(c.UserContext(), principalOf(c).WorkspaceID)
	if err != nil {
		return err
	}
	return c.JSON(fiber.Map{"bundles": list})
}

// getBundle answers GET /api/admin/bundles/:id with the bundle's versions.
func (s *server) getBundle(c *fiber.Ctx) error {
	d, err := s.Bundles.Get(c.UserContext(), principalOf(c).WorkspaceID, c.Params("id"))
	if err != nil {
		return err
	}
	return c.JSON(d)
}

// createBundle answers POST /api/admin/bundles?name=NAME, whose raw body is
// the bundle (Content-Type text/html or text/javascript, at most 4 MiB:
// larger is a 413), with version 1: id, version, sha256, size, content
// type and the URL it is served at.
func (s *server) createBundle(c *fiber.Ctx) error {
	v, err := s.Bundles.Create(c.UserContext(), principalOf(c).WorkspaceID, adminActor(c), uploadOf(c))
	if err != nil {
		return err
	}
	return c.Status(fiber.StatusCreated).JSON(v)
}

// addBundleVersion answers POST /api/admin/bundles/:id/versions[?name=],
// same body as createBundle, with the next version.
func (s *server) addBundleVersion(c *fiber.Ctx) error {
	v, err := s.Bundles.AddVersion(c.UserContext(), principalOf(c).WorkspaceID, adminActor(c), c.Params("id"), uploadOf(c))
	if err != nil {
		return err
	}
	return c.Status(fiber.StatusCreated).JSON(v)
}

// deleteBundle removes every version of a bundle no configured tool uses.
func (s *server) deleteBundle(c *fiber.Ctx) error {
	if err := s.Bundles.Delete(c.UserContext(), principalOf(c).WorkspaceID, adminActor(c), c.Params("id")); err != nil {
		return err
	}
	return c.SendStatus(fiber.StatusNoContent)
}

// decideBundleGrant answers POST
// /api/admin/bundles/:id/versions/:version/grants/:decision (approve, refuse
// or withdraw) with the version's grants as decided: the console's decision
// for scripts and CI (docs/admins.md#approving-network-grants), audited as
// bundle.grant.<decision>. A decision the declaration's state does not allow
// is a 409; a version that declares nothing, or another workspace's, a 404.
func (s *server) decideBundleGrant(c *fiber.Ctx) error {
	version, err := strconv.Atoi(c.Params("version"))
	if err != nil || version < 1 {
		return apperr.NotFoundf("version %q not found", c.Params("version"))
	}
	g, err := s.Bundles.Decide(c.UserContext(), principalOf(c).WorkspaceID, adminActor(c), c.Params("id"), version, c.Params("decision"))
	if err != nil {
		return err
	}
	return c.JSON(g)
}

// previewBundleVersion answers POST
// /api/admin/bundles/:id/versions/:version/preview-sessions {binding_id}
// with 201 and a preview session of the version against that binding of
// the workspace: read-only, on no task, short-lived, audited as
// session.preview (docs/architecture.md#preview-sessions). A version or
// binding of another workspace is a 404; past the workspace's live
// previews, a 429.
func (s *server) previewBundleVersion(c *fiber.Ctx) error {
	version, err := strconv.Atoi(c.Params("version"))
	if err != nil || version < 1 {
		return apperr.NotFoundf("version %q not found", c.Params("version"))
	}
	var in struct {
		BindingID string `json:"binding_id"`
	}
	if err := decodeStrictBody(c, &in); err != nil {
		return err
	}
	if !models.IsID(in.BindingID) {
		return apperr.Invalidf("binding_id must be the UUID of a binding of the workspace, got %q", in.BindingID)
	}
	p := principalOf(c)
	pv, err := s.Artifacts.Preview(c.UserContext(), artifact.PreviewRequest{WorkspaceID: p.WorkspaceID, Actor: adminActor(c),
		UserID: p.UserID, TokenID: p.TokenID, BundleID: c.Params("id"), Version: version, BindingID: in.BindingID})
	if err != nil {
		return err
	}
	return c.Status(fiber.StatusCreated).JSON(pv)
}

// serveBundle answers GET /bundles/:id/:version with the bytes, their
// content type, the sha256 as ETag (a matching If-None-Match is a 304), a
// year of immutable caching and the bundle content security policy. A
// version that declares network grants is served with no-cache and an ETag
// that names its policy too, which adds its approved origins
// (docs/bundle-authors.md#declaring-network-grants).
func (s *server) serveBundle(c *fiber.Ctx) error {
	version, err := strconv.Atoi(c.Params("version"))
	if err != nil {
		return apperr.NotFoundf("bundle not found")
	}
	v, err := s.Bundles.Open(c.UserContext(), c.Params("id"), version)
	if err != nil {
		return err
	}
	for _, h := range s.Bundles.Headers(v) {
		c.Set(h[0], h[1])
	}
	if bundle.NotModified(c.Get(fiber.HeaderIfNoneMatch), v.ETag()) {
		return c.SendStatus(fiber.StatusNotModified)
	}
	return c.Send(v.Content)
}
