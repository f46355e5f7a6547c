package console

import (
	"github.com/gofiber/fiber/v2"

	"github.com/appruntime/appruntime/internal/admin"
)

// agentFormFields are the agent form's fields, named as the admin API names
// them (and as its refusals do).
var agentFormFields = []string{"name", "resume_webhook_url", "webhook_events"}

// createAgent answers POST /agents (name, resume_webhook_url) as
// POST /api/admin/agents does: the agent is created with a fresh webhook
// signing secret, shown on this one page, never again. A refusal shows the
// form again with the input and the message beside its field.
func (s *server) createAgent(c *fiber.Ctx) error {
	a := adminOf(c)
	in := admin.AgentInput{Name: c.FormValue("name"), ResumeWebhookURL: c.FormValue("resume_webhook_url")}
	v, err := s.Admin.CreateAgent(c.UserContext(), a.WorkspaceID, a.actor(), in)
	if r, refused := refuseForm(err, agentFormFields...); refused {
		return s.renderAgents(c, r.Status, in, r)
	}
	if err != nil {
		return err
	}
	return s.render(c, fiber.StatusCreated, "agent_secret", "Agent created", "agents", agentSecretPage{Agent: v, Created: true})
}
