package console

import (
	"github.com/gofiber/fiber/v2"

	"github.com/appruntime/appruntime/internal/admin"
)

// agentsPage is the agents list with the form that creates one.
type agentsPage struct {
	Agents []admin.AgentView
	// Form is what the create form holds (the refused input, after a refusal).
	Form    admin.AgentInput
	Refusal formRefusal
}

// listAgents answers GET /agents: each agent's key details, summary
// template and where its resume events go (never its webhook secret).
func (s *server) listAgents(c *fiber.Ctx) error {
	return s.renderAgents(c, fiber.StatusOK, admin.AgentInput{}, formRefusal{})
}

// renderAgents renders the agents page with form in the create form.
func (s *server) renderAgents(c *fiber.Ctx, status int, form admin.AgentInput, r formRefusal) error {
	list, err := s.Admin.ListAgents(c.UserContext(), adminOf(c).WorkspaceID)
	if err != nil {
		return err
	}
	return s.renderView(c, status, "agents", view{Title: "Agents", Section: "agents", Error: r.Page(),
		Data: agentsPage{Agents: list, Form: form, Refusal: r}})
}
