package console

import (
	"github.com/gofiber/fiber/v2"
)

// listIntegrations answers GET /integrations. Secrets are write-only: the
// page shows which keys are set, never a value.
func (s *server) listIntegrations(c *fiber.Ctx) error {
	list, err := s.Admin.ListIntegrations(c.UserContext(), adminOf(c).WorkspaceID)
	if err != nil {
		return err
	}
	return s.render(c, fiber.StatusOK, "integrations", "Integrations", "integrations", integrationsPage{Integrations: list})
}
