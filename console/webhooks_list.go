package console

import (
	"github.com/gofiber/fiber/v2"

	"github.com/appruntime/appruntime/internal/admin"
	"github.com/appruntime/appruntime/internal/review"
	"github.com/appruntime/appruntime/models"
)

// webhooksPage is a page of delivery attempts and the search that found it.
type webhooksPage struct {
	Filter review.DeliveryFilter
	review.DeliveryPage
	// Delivered names the events some attempt delivered: they cannot be
	// redelivered.
	Delivered map[string]bool
	// Agents are the workspace's agents, by name, for the agent select;
	// EventTypes and Statuses the other selects' choices.
	Agents               []admin.AgentView
	EventTypes, Statuses []string
}

// Link returns /webhooks with the page's search and page n, so a search
// can be shared and paged.
func (p webhooksPage) Link(n int) string {
	return searchLink("/webhooks", n, "agent", p.Filter.AgentID, "task", p.Filter.TaskID,
		"event", p.Filter.EventType, "status", p.Filter.Status)
}

// listWebhookDeliveries answers GET
// /webhooks[?agent=…&task=…&event=…&status=…&page=…]: every attempt to post
// a resume event to an agent's webhook, newest first, with its status,
// latency and error, and a redeliver button on the events no attempt on
// the page delivered.
func (s *server) listWebhookDeliveries(c *fiber.Ctx) error {
	ctx, ws := c.UserContext(), adminOf(c).WorkspaceID
	p := webhooksPage{
		Filter: review.DeliveryFilter{AgentID: c.Query("agent"), TaskID: c.Query("task"),
			EventType: c.Query("event"), Status: c.Query("status"), Page: pageParam(c)},
		EventTypes: review.EventTypes, Statuses: review.DeliveryStatuses, Delivered: map[string]bool{},
	}
	var err error
	if p.DeliveryPage, err = s.Resumes.Deliveries(ctx, ws, p.Filter); err != nil {
		return err
	}
	for _, d := range p.Deliveries {
		if d.StatusCode >= 200 && d.StatusCode < 300 {
			p.Delivered[d.EventID] = true
		}
	}
	if p.Agents, err = s.Admin.ListAgents(ctx, ws); err != nil {
		return err
	}
	return s.render(c, fiber.StatusOK, "webhooks", "Webhook deliveries", "webhooks", p)
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
