package console

import (
	"github.com/gofiber/fiber/v2"
)

// listAgents answers GET /agents: each agent's key details, summary
// template and where its resume events go (never its webhook secret).
func (s *server) listAgents(c *fiber.Ctx) error {
	list, err := s.Admin.ListAgents(c.UserContext(), adminOf(c).WorkspaceID)
	if err != nil {
		return err
	}
	return s.render(c, fiber.StatusOK, "agents", "Agents", "agents", list)
}
