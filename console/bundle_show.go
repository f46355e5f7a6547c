package console

import (
	"github.com/gofiber/fiber/v2"
)

// showBundle answers GET /bundles/:id: a bundle with every version.
func (s *server) showBundle(c *fiber.Ctx) error {
	d, err := s.Bundles.Get(c.UserContext(), adminOf(c).WorkspaceID, c.Params("id"))
	if err != nil {
		return err
	}
	return s.render(c, fiber.StatusOK, "bundle", "Bundle "+d.Name, "bundles", d)
}
