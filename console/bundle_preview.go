package console

import (
	"strconv"

	"github.com/gofiber/fiber/v2"

	"github.com/appruntime/appruntime/internal/apperr"
	"github.com/appruntime/appruntime/internal/bundle"
)

// bundlePreview is the preview page's data.
type bundlePreview struct {
	Bundle  bundle.Detail
	Version bundle.Version
}

// previewBundleVersion answers GET /bundles/:id/versions/:version/preview: the
// version mounted in the same frame as an artifact's (sandbox="allow-scripts",
// no same-origin, served by the bundle origin under its own policy), so
// the admin sees it render before a tool mounts it. The frame holds no
// session: calls to the runtime are refused until a task mounts it.
func (s *server) previewBundleVersion(c *fiber.Ctx) error {
	v, err := strconv.Atoi(c.Params("version"))
	if err != nil || v < 1 {
		return apperr.NotFoundf("version %q not found", c.Params("version"))
	}
	d, err := s.Bundles.Get(c.UserContext(), adminOf(c).WorkspaceID, c.Params("id"))
	if err != nil {
		return err
	}
	for _, ver := range d.Versions {
		if ver.Version == v {
			c.Set(fiber.HeaderContentSecurityPolicy, artifactCSP(s.bundleOrigin))
			return s.render(c, fiber.StatusOK, "bundle_preview", "Preview of "+d.Name+" v"+strconv.Itoa(v), "bundles", bundlePreview{Bundle: d, Version: ver})
		}
	}
	return apperr.NotFoundf("bundle %s has no version %d", d.ID, v)
}
