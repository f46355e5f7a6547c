package console

import (
	"github.com/gofiber/fiber/v2"

	"github.com/appruntime/appruntime/internal/admin"
	"github.com/appruntime/appruntime/internal/webhook"
)

// agentPage is an agent with the forms that rename it, set its resume
// webhook, rotate its webhook secret and delete it.
type agentPage struct {
	Agent admin.AgentView
	// Form is what the edit form holds (the refused input, after a refusal).
	Form    admin.AgentInput
	Refusal formRefusal
	// Overlaps are the choices of how long a rotated-out secret keeps signing.
	Overlaps []overlapChoice
	// EventTypes are the webhook event catalogue, a checkbox each.
	EventTypes []webhook.EventType
}

// AllEvents reports whether the form's agent receives every event type.
func (p agentPage) AllEvents() bool { return p.Form.WebhookEvents == nil }

// Receives reports whether the form's agent receives event type name.
func (p agentPage) Receives(name string) bool {
	return webhook.Subscribed(derefEvents(p.Form.WebhookEvents), name)
}

func derefEvents(events *[]string) []string {
	if events == nil {
		return nil
	}
	return *events
}

// overlapChoice is one choice of the rotation form.
type overlapChoice struct {
	Seconds int
	Label   string
	Default bool
}

// rotationOverlaps are the rotation form's choices: the API's default, none
// (a leaked secret) and the API's longest.
var rotationOverlaps = []overlapChoice{
	{Seconds: int(webhook.DefaultRotationOverlap.Seconds()), Label: "24 hours (the default)", Default: true},
	{Seconds: 3600, Label: "1 hour"},
	{Seconds: int(webhook.MaxRotationOverlap.Seconds()), Label: "7 days (the longest)"},
	{Seconds: 0, Label: "none: retire the old secret at once (it leaked)"},
}

// showAgent answers GET /agents/:id.
func (s *server) showAgent(c *fiber.Ctx) error {
	return s.renderAgent(c, fiber.StatusOK, nil, formRefusal{})
}

// renderAgent renders the agent page; form, when not nil, is the refused
// input of the edit form, kept in it.
func (s *server) renderAgent(c *fiber.Ctx, status int, form *admin.AgentInput, r formRefusal) error {
	v, err := s.Admin.GetAgent(c.UserContext(), adminOf(c).WorkspaceID, c.Params("id"))
	if err != nil {
		return err
	}
	pg := agentPage{Agent: v, Refusal: r, Overlaps: rotationOverlaps, EventTypes: webhook.Catalogue,
		Form: admin.AgentInput{Name: v.Name, ResumeWebhookURL: v.ResumeWebhookURL}}
	if v.WebhookEvents != nil {
		pg.Form.WebhookEvents = &v.WebhookEvents
	}
	if form != nil {
		pg.Form = *form
	}
	return s.renderView(c, status, "agent", view{Title: "Agent " + v.Name, Section: "agents", Error: r.Page(), Data: pg})
}
