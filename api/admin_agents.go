package api

import (
	"time"

	"github.com/gofiber/fiber/v2"

	"github.com/appruntime/appruntime/internal/admin"
	"github.com/appruntime/appruntime/internal/webhook"
	"github.com/appruntime/appruntime/models"
)

// adminAgentRoutes mounts /api/admin/agents. Creating an agent, and rotating
// its webhook secret, returns the signing secret ("webhook_secret") once.
func (s *server) adminAgentRoutes(app *fiber.App) {
	adminOnly := s.requireToken(models.ScopeAdmin)
	app.Get("/api/admin/agents", adminOnly, s.listAgents)
	app.Post("/api/admin/agents", adminOnly, s.createAgent)
	app.Get("/api/admin/agents/:id", adminOnly, s.getAgent)
	app.Patch("/api/admin/agents/:id", adminOnly, s.updateAgent)
	app.Put("/api/admin/agents/:id", adminOnly, s.updateAgent)
	app.Delete("/api/admin/agents/:id", adminOnly, s.deleteAgent)
	app.Post("/api/admin/agents/:id/webhook-secret/rotate", adminOnly, s.rotateAgentWebhookSecret)
}

func (s *server) listAgents(c *fiber.Ctx) error {
	list, err := s.Admin.ListAgents(c.UserContext(), principalOf(c).WorkspaceID)
	if err != nil {
		return err
	}
	return c.JSON(fiber.Map{"agents": list})
}

func (s *server) getAgent(c *fiber.Ctx) error {
	a, err := s.Admin.GetAgent(c.UserContext(), principalOf(c).WorkspaceID, c.Params("id"))
	if err != nil {
		return err
	}
	return c.JSON(a)
}

// createAgent answers POST /api/admin/agents {"name","key_definitions",
// "summary_instructions","priority_field","document_translation_enabled",
// "resume_webhook_url"}.
func (s *server) createAgent(c *fiber.Ctx) error {
	var in admin.AgentInput
	if err := decodeStrictBody(c, &in); err != nil {
		return err
	}
	a, err := s.Admin.CreateAgent(c.UserContext(), principalOf(c).WorkspaceID, adminActor(c), in)
	if err != nil {
		return err
	}
	return c.Status(fiber.StatusCreated).JSON(a)
}

// updateAgent takes a merge patch of the create fields.
func (s *server) updateAgent(c *fiber.Ctx) error {
	a, err := s.Admin.UpdateAgent(c.UserContext(), principalOf(c).WorkspaceID, adminActor(c), c.Params("id"), c.Body())
	if err != nil {
		return err
	}
	return c.JSON(a)
}

// rotateBody is the optional body of a rotation: how long the replaced
// secret keeps signing beside the new one (default a day, 0 retires it at once).
type rotateBody struct {
	OverlapSeconds *int `json:"overlap_seconds"`
}

func (s *server) rotateAgentWebhookSecret(c *fiber.Ctx) error {
	var in rotateBody
	if len(c.Body()) > 0 {
		if err := decodeStrictBody(c, &in); err != nil {
			return err
		}
	}
	overlap := webhook.DefaultRotationOverlap
	if in.OverlapSeconds != nil {
		overlap = time.Duration(*in.OverlapSeconds) * time.Second
	}
	a, err := s.Admin.RotateWebhookSecret(c.UserContext(), principalOf(c).WorkspaceID, adminActor(c), c.Params("id"), overlap)
	if err != nil {
		return err
	}
	return c.JSON(a)
}

func (s *server) deleteAgent(c *fiber.Ctx) error {
	if err := s.Admin.DeleteAgent(c.UserContext(), principalOf(c).WorkspaceID, adminActor(c), c.Params("id")); err != nil {
		return err
	}
	return c.SendStatus(fiber.StatusNoContent)
}
