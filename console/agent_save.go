package console

import (
	"encoding/json"

	"github.com/gofiber/fiber/v2"

	"github.com/appruntime/appruntime/internal/admin"
)

// saveAgent answers POST /agents/:id (name, resume_webhook_url): a merge
// patch of those two fields, as PATCH /api/admin/agents/:id takes it, so
// the same checks apply and the change is audited as agent.update. An
// empty URL removes the webhook (the platform's events are then pulled).
func (s *server) saveAgent(c *fiber.Ctx) error {
	a := adminOf(c)
	in := admin.AgentInput{Name: c.FormValue("name"), ResumeWebhookURL: c.FormValue("resume_webhook_url")}
	patch, err := json.Marshal(map[string]string{"name": in.Name, "resume_webhook_url": in.ResumeWebhookURL})
	if err != nil {
		return err
	}
	_, err = s.Admin.UpdateAgent(c.UserContext(), a.WorkspaceID, a.actor(), c.Params("id"), patch)
	if r, refused := refuseForm(err, agentFormFields...); refused {
		return s.renderAgent(c, r.Status, &in, r)
	}
	if err != nil {
		return err
	}
	return redirectTo(c, "/agents/"+c.Params("id"), "agent_saved")
}
