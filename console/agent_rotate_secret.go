package console

import (
	"fmt"
	"strconv"
	"time"

	"github.com/gofiber/fiber/v2"

	"github.com/appruntime/appruntime/internal/admin"
)

// agentSecretPage shows an agent's new webhook secret, this once.
type agentSecretPage struct {
	Agent admin.AgentView
	// Created is set when the agent was just created (no secret is replaced).
	Created bool
	// Overlap is how long the replaced secret keeps signing.
	Overlap time.Duration
}

// OverlapText says how long the replaced secret keeps signing, in the
// words of the rotation form ("24 hours", "7 days", "1 hour").
func (p agentSecretPage) OverlapText() string {
	d := p.Overlap
	switch {
	case d > 24*time.Hour && d%(24*time.Hour) == 0:
		return fmt.Sprintf("%d days", d/(24*time.Hour))
	case d == time.Hour:
		return "1 hour"
	case d%time.Hour == 0:
		return fmt.Sprintf("%d hours", d/time.Hour)
	}
	return age(d)
}

// rotateAgentSecret answers POST /agents/:id/webhook-secret/rotate
// (overlap_seconds) as POST /api/admin/agents/:id/webhook-secret/rotate
// does: a fresh secret, shown on this one page; the replaced one keeps
// signing beside it for the overlap, so every delivery in it carries both
// signatures (docs/admins.md#the-console).
func (s *server) rotateAgentSecret(c *fiber.Ctx) error {
	a := adminOf(c)
	secs, err := strconv.Atoi(c.FormValue("overlap_seconds"))
	if err != nil {
		secs = -1 // refused below as the API refuses it
	}
	overlap := time.Duration(secs) * time.Second
	v, err := s.Admin.RotateWebhookSecret(c.UserContext(), a.WorkspaceID, a.actor(), c.Params("id"), overlap)
	if r, refused := refuseForm(err, "overlap_seconds"); refused {
		return s.renderAgent(c, r.Status, nil, r)
	}
	if err != nil {
		return err
	}
	return s.render(c, fiber.StatusOK, "agent_secret", "Webhook secret rotated", "agents", agentSecretPage{Agent: v, Overlap: overlap})
}
