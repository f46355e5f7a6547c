package console

import (
	"github.com/gofiber/fiber/v2"
)

// showBundle answers GET /bundles/:id: a bundle with every version, the
// tools that mount it and the forms that upload its next version.
func (s *server) showBundle(c *fiber.Ctx) error {
	pg, err := s.bundlePageOf(c, c.Params("id"), bundleUploadForm{})
	if err != nil {
		return err
	}
	return s.render(c, fiber.StatusOK, "bundle", "Bundle "+pg.Name, "bundles", pg)
}
