package console

import (
	"github.com/gofiber/fiber/v2"
)

// deleteAgent answers POST /agents/:id/delete as DELETE
// /api/admin/agents/:id does: the agent goes with its tasks, configured
// tools, agent tools and tokens (the page states it). The form's "confirm"
// box must be ticked; without it the page comes back with the box named.
func (s *server) deleteAgent(c *fiber.Ctx) error {
	a := adminOf(c)
	if c.FormValue("confirm") != "yes" {
		return s.renderAgent(c, fiber.StatusBadRequest, nil,
			formRefusal{Status: fiber.StatusBadRequest, Field: "confirm", Message: "tick the box to confirm what the deletion takes with it"})
	}
	err := s.Admin.DeleteAgent(c.UserContext(), a.WorkspaceID, a.actor(), c.Params("id"))
	if r, refused := refuseForm(err); refused {
		r.Field = "confirm" // a row the cascade does not reach still uses it (409)
		return s.renderAgent(c, r.Status, nil, r)
	}
	if err != nil {
		return err
	}
	return redirectTo(c, "/agents", "agent_deleted")
}
