package console

import (
	"encoding/json"
	"fmt"
	"strconv"

	"github.com/gofiber/fiber/v2"

	"github.com/appruntime/appruntime/internal/apperr"
	"github.com/appruntime/appruntime/internal/artifact"
	"github.com/appruntime/appruntime/internal/binding"
	"github.com/appruntime/appruntime/internal/bundle"
)

// bundlePreview is the preview page's data.
type bundlePreview struct {
	Bundle  bundle.Detail
	Version bundle.Version
	// Bindings are the workspace's bindings to preview against; BindingID
	// is the one chosen (or preselected: the binding of the first tool that
	// mounts the bundle, the demo's for the demo bundle).
	Bindings  []binding.Binding
	BindingID string
	// Preview and Init are set once a preview session is minted (POST):
	// Init is the JSON of the init message static/host.js posts.
	Preview artifact.Preview
	Init    string
}

// bundlePreviewOf loads the bundle, its version :version and the
// workspace's bindings for the preview page.
func (s *server) bundlePreviewOf(c *fiber.Ctx) (bundlePreview, error) {
	v, err := strconv.Atoi(c.Params("version"))
	if err != nil || v < 1 {
		return bundlePreview{}, apperr.NotFoundf("version %q not found", c.Params("version"))
	}
	ws := adminOf(c).WorkspaceID
	d, err := s.Bundles.Get(c.UserContext(), ws, c.Params("id"))
	if err != nil {
		return bundlePreview{}, err
	}
	p := bundlePreview{Bundle: d}
	found := false
	for _, ver := range d.Versions {
		if ver.Version == v {
			p.Version, found = ver, true
		}
	}
	if !found {
		return bundlePreview{}, apperr.NotFoundf("bundle %s has no version %d", d.ID, v)
	}
	if p.Bindings, err = s.Bindings.List(c.UserContext(), ws); err != nil {
		return bundlePreview{}, err
	}
	uses, err := s.Bundles.Uses(c.UserContext(), ws, d.ID)
	if err != nil {
		return bundlePreview{}, err
	}
	for _, u := range uses {
		if u.BindingID != "" {
			p.BindingID = u.BindingID
			break
		}
	}
	return p, nil
}

// previewBundleVersion answers GET /bundles/:id/versions/:version/preview:
// the version mounted in the same frame as an artifact's (sandbox="allow-scripts",
// no same-origin, served by the bundle origin under its own policy and
// grants), with no session, and the form that mints a preview session
// against a chosen binding (POST, mintBundlePreview). A GET never mints.
func (s *server) previewBundleVersion(c *fiber.Ctx) error {
	p, err := s.bundlePreviewOf(c)
	if err != nil {
		return err
	}
	c.Set(fiber.HeaderContentSecurityPolicy, artifactCSP(s.bundleOrigin))
	return s.render(c, fiber.StatusOK, "bundle_preview", "Preview of "+p.Bundle.Name+" v"+strconv.Itoa(p.Version.Version), "bundles", p)
}

// mintBundlePreview answers POST /bundles/:id/versions/:version/preview
// (binding_id, with the CSRF token): a read-only preview session of the
// version against that binding (artifact.Minter.Preview, audited), and the
// page mounting the version with its init message, as the artifact page
// mounts a task's (docs/architecture.md#preview-sessions).
func (s *server) mintBundlePreview(c *fiber.Ctx) error {
	p, err := s.bundlePreviewOf(c)
	if err != nil {
		return err
	}
	a := adminOf(c)
	p.BindingID = c.FormValue("binding_id")
	pv, err := s.Artifacts.Preview(c.UserContext(), artifact.PreviewRequest{WorkspaceID: a.WorkspaceID, Actor: a.actor(),
		UserID: a.ID, BundleID: p.Bundle.ID, Version: p.Version.Version, BindingID: p.BindingID})
	if err != nil {
		return err
	}
	init, err := json.Marshal(pv.Init)
	if err != nil {
		return fmt.Errorf("console: encode init message: %w", err)
	}
	p.Preview, p.Init = pv, string(init)
	c.Set(fiber.HeaderContentSecurityPolicy, artifactCSP(s.bundleOrigin))
	return s.render(c, fiber.StatusOK, "bundle_preview", "Preview of "+p.Bundle.Name+" v"+strconv.Itoa(p.Version.Version), "bundles", p)
}
