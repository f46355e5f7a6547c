package api

import (
	"github.com/gofiber/fiber/v2"

	"github.com/appruntime/appruntime/internal/toolconfig"
	"github.com/appruntime/appruntime/models"
)

// adminConfiguredToolRoutes mounts /api/admin/configured-tools.
func (s *server) adminConfiguredToolRoutes(app *fiber.App) {
	adminOnly := s.requireToken(models.ScopeAdmin)
	app.Get("/api/admin/configured-tools", adminOnly, s.listConfiguredTools)
	app.Post("/api/admin/configured-tools", adminOnly, s.createConfiguredTool)
	app.Get("/api/admin/configured-tools/:id", adminOnly, s.getConfiguredTool)
	app.Patch("/api/admin/configured-tools/:id", adminOnly, s.updateConfiguredTool)
	app.Put("/api/admin/configured-tools/:id", adminOnly, s.updateConfiguredTool)
	app.Delete("/api/admin/configured-tools/:id", adminOnly, s.deleteConfiguredTool)
}

// listConfiguredTools answers GET /api/admin/configured-tools[?agent_id=].
func (s *server) listConfiguredTools(c *fiber.Ctx) error {
	list, err := s.Tools.List(c.UserContext(), principalOf(c).WorkspaceID, c.Query("agent_id"))
	if err != nil {
		return err
	}
	return c.JSON(fiber.Map{"configured_tools": list})
}

func (s *server) getConfiguredTool(c *fiber.Ctx) error {
	t, err := s.Tools.Get(c.UserContext(), principalOf(c).WorkspaceID, c.Params("id"))
	if err != nil {
		return err
	}
	return c.JSON(t)
}

// createConfiguredTool answers POST /api/admin/configured-tools with
// {"agent_id","display_name","base_tool","config","input_schema",
// "integration_id"} and, for an app tool, {"bundle_id","bundle_version",
// "binding_id","producer_tool_id","action_schema","theme",
// "default_fullscreen","await_review","await_expiry_seconds"}.
func (s *server) createConfiguredTool(c *fiber.Ctx) error {
	var in toolconfig.Input
	if err := decodeStrictBody(c, &in); err != nil {
		return err
	}
	t, err := s.Tools.Create(c.UserContext(), principalOf(c).WorkspaceID, adminActor(c), in)
	if err != nil {
		return err
	}
	return c.Status(fiber.StatusCreated).JSON(t)
}

// updateConfiguredTool takes a merge patch of the create fields (null
// clears one); agent_id and base_tool cannot change.
func (s *server) updateConfiguredTool(c *fiber.Ctx) error {
	t, err := s.Tools.Update(c.UserContext(), principalOf(c).WorkspaceID, adminActor(c), c.Params("id"), c.Body())
	if err != nil {
		return err
	}
	return c.JSON(t)
}

func (s *server) deleteConfiguredTool(c *fiber.Ctx) error {
	if err := s.Tools.Delete(c.UserContext(), principalOf(c).WorkspaceID, adminActor(c), c.Params("id")); err != nil {
		return err
	}
	return c.SendStatus(fiber.StatusNoContent)
}
