package console

import (
	"github.com/gofiber/fiber/v2"
)

// listBundles answers GET /bundles: the newest version of every bundle.
func (s *server) listBundles(c *fiber.Ctx) error {
	list, err := s.Bundles.List(c.UserContext(), adminOf(c).WorkspaceID)
	if err != nil {
		return err
	}
	return s.render(c, fiber.StatusOK, "bundles", "Bundles", "bundles", list)
}
