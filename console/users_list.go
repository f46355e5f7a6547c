package console

import (
	"github.com/gofiber/fiber/v2"
)

// listUsers answers GET /users: the workspace's admins and reviewers.
func (s *server) listUsers(c *fiber.Ctx) error {
	list, err := s.Admin.ListUsers(c.UserContext(), adminOf(c).WorkspaceID)
	if err != nil {
		return err
	}
	return s.render(c, fiber.StatusOK, "users", "Users", "users", list)
}
