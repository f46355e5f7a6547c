package console

import (
	"encoding/json"

	"github.com/gofiber/fiber/v2"

	"github.com/appruntime/appruntime/internal/admin"
)

// saveAgent answers POST /agents/:id (name, resume_webhook_url,
// webhook_events_all, webhook_events…): a merge patch of those fields, as
// PATCH /api/admin/agents/:id takes it, so the same checks apply and the
// change is audited as agent.update. An empty URL removes the webhook (the
// platform's events are then pulled). "All event types" checked stores
// null (every type, also those added later); otherwise the checked types
// (docs/agent-platforms.md#webhook-event-catalogue).
func (s *server) saveAgent(c *fiber.Ctx) error {
	a := adminOf(c)
	in := admin.AgentInput{Name: c.FormValue("name"), ResumeWebhookURL: c.FormValue("resume_webhook_url")}
	fields := map[string]any{"name": in.Name, "resume_webhook_url": in.ResumeWebhookURL}
	// The form's checkboxes come with a marker: a post without it (an older
	// page) leaves the subscription as it is.
	if c.FormValue("webhook_events_form") != "" {
		if c.FormValue("webhook_events_all") == "" {
			events := []string{}
			for _, v := range c.Request().PostArgs().PeekMulti("webhook_events") {
				events = append(events, string(v))
			}
			in.WebhookEvents = &events
		}
		fields["webhook_events"] = in.WebhookEvents
	}
	patch, err := json.Marshal(fields)
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
