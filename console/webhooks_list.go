package console

import (
	"github.com/gofiber/fiber/v2"

	"github.com/appruntime/appruntime/internal/review"
	"github.com/appruntime/appruntime/models"
)

// webhooksPage lists delivery attempts, for one agent or one task when the
// query names it.
type webhooksPage struct {
	Filter     review.DeliveryFilter
	Deliveries []models.WebhookDelivery
	// Delivered names the events some attempt delivered: they cannot be
	// redelivered.
	Delivered map[string]bool
}

// listWebhookDeliveries answers GET /webhooks[?agent=ID][&task=ID]: every
// attempt to post a resume event to an agent's webhook, newest first, with
// its status, latency and error, and a redeliver button on the events no
// attempt delivered.
func (s *server) listWebhookDeliveries(c *fiber.Ctx) error {
	f := review.DeliveryFilter{AgentID: c.Query("agent"), TaskID: c.Query("task")}
	list, err := s.Resumes.Deliveries(c.UserContext(), adminOf(c).WorkspaceID, f)
	if err != nil {
		return err
	}
	delivered := map[string]bool{}
	for _, d := range list {
		if d.StatusCode >= 200 && d.StatusCode < 300 {
			delivered[d.EventID] = true
		}
	}
	return s.render(c, fiber.StatusOK, "webhooks", "Webhook deliveries", "webhooks",
		webhooksPage{Filter: f, Deliveries: list, Delivered: delivered})
}

// redeliverWebhook answers POST /webhooks/:event/redeliver (audited): one
// more delivery of an event no attempt delivered, back to the listing the
// form came from.
func (s *server) redeliverWebhook(c *fiber.Ctx) error {
	a := adminOf(c)
	if err := s.Resumes.Redeliver(c.UserContext(), a.WorkspaceID, a.actor(), c.Params("event")); err != nil {
		return err
	}
	back := "/webhooks"
	if t := c.FormValue("task"); models.IsID(t) {
		back += "?task=" + t
	}
	return redirectTo(c, back, "redelivering")
}
