package api

import (
	"github.com/gofiber/fiber/v2"

	"github.com/appruntime/appruntime/models"
)

// adminAgentToolRoutes mounts /api/admin/agents/:agent_id/tools: an
// agent's tool declarations (seed 003), in the seed's JSON (name,
// displayName, description, input, target).
func (s *server) adminAgentToolRoutes(app *fiber.App) {
	adminOnly := s.requireToken(models.ScopeAdmin)
	app.Get("/api/admin/agents/:agent_id/tools", adminOnly, s.listAgentTools)
	app.Post("/api/admin/agents/:agent_id/tools", adminOnly, s.createAgentTool)
	app.Get("/api/admin/agents/:agent_id/tools/:id", adminOnly, s.getAgentTool)
	app.Patch("/api/admin/agents/:agent_id/tools/:id", adminOnly, s.updateAgentTool)
	app.Delete("/api/admin/agents/:agent_id/tools/:id", adminOnly, s.deleteAgentTool)
}

func (s *server) listAgentTools(c *fiber.Ctx) error {
	list, err := s.AgentCalls.ListDeclarations(c.UserContext(), principalOf(c).WorkspaceID, c.Params("agent_id"))
	if err != nil {
		return err
	}
	return c.JSON(fiber.Map{"tools": list})
}

func (s *server) getAgentTool(c *fiber.Ctx) error {
	d, err := s.AgentCalls.GetDeclaration(c.UserContext(), principalOf(c).WorkspaceID, c.Params("agent_id"), c.Params("id"))
	if err != nil {
		return err
	}
	return c.JSON(d)
}

// createAgentTool answers POST /api/admin/agents/:agent_id/tools with the
// saved declaration (201); unknown fields, a bad name, schema or target,
// and Authorization in an app target's headers are 400, a name the agent
// has already 409.
func (s *server) createAgentTool(c *fiber.Ctx) error {
	d, err := s.AgentCalls.CreateDeclaration(c.UserContext(), principalOf(c).WorkspaceID, c.Params("agent_id"), adminActor(c), c.Body())
	if err != nil {
		return err
	}
	return c.Status(fiber.StatusCreated).JSON(d)
}

// updateAgentTool takes a JSON merge patch of the declaration's fields.
func (s *server) updateAgentTool(c *fiber.Ctx) error {
	d, err := s.AgentCalls.UpdateDeclaration(c.UserContext(), principalOf(c).WorkspaceID, c.Params("agent_id"), adminActor(c), c.Params("id"), c.Body())
	if err != nil {
		return err
	}
	return c.JSON(d)
}

func (s *server) deleteAgentTool(c *fiber.Ctx) error {
	if err := s.AgentCalls.DeleteDeclaration(c.UserContext(), principalOf(c).WorkspaceID, c.Params("agent_id"), adminActor(c), c.Params("id")); err != nil {
		return err
	}
	return c.SendStatus(fiber.StatusNoContent)
}
