package api

import (
	"github.com/gofiber/fiber/v2"

	"github.com/appruntime/appruntime/internal/apperr"
	"github.com/appruntime/appruntime/internal/strictjson"
	"github.com/appruntime/appruntime/models"
)

// adminWorkspaceRoutes mounts /api/admin/workspaces. An admin token sees and
// edits its own workspace; it cannot create one (docs/architecture.md#9-operators-create-workspaces): an operator does, with `appruntime workspace create`.
func (s *server) adminWorkspaceRoutes(app *fiber.App) {
	adminOnly := s.requireToken(models.ScopeAdmin)
	app.Get("/api/admin/workspaces", adminOnly, s.listWorkspaces)
	app.Post("/api/admin/workspaces", adminOnly, s.createWorkspace)
	app.Get("/api/admin/workspaces/:id", adminOnly, s.getWorkspace)
	app.Patch("/api/admin/workspaces/:id", adminOnly, s.updateWorkspace)
	app.Put("/api/admin/workspaces/:id", adminOnly, s.updateWorkspace)
	app.Delete("/api/admin/workspaces/:id", adminOnly, s.deleteWorkspace)
}

// decodeStrictBody parses a JSON request body into v: one object, no
// unknown fields, type errors naming the field.
func decodeStrictBody(c *fiber.Ctx, v any) error { return strictjson.Decode(c.Body(), v) }

// adminActor names the admin token's principal in the audit log.
func adminActor(c *fiber.Ctx) string { return principalOf(c).Actor() }

func (s *server) listWorkspaces(c *fiber.Ctx) error {
	list, err := s.Admin.ListWorkspaces(c.UserContext(), principalOf(c).WorkspaceID)
	if err != nil {
		return err
	}
	return c.JSON(fiber.Map{"workspaces": list})
}

func (s *server) getWorkspace(c *fiber.Ctx) error {
	w, err := s.Admin.GetWorkspace(c.UserContext(), principalOf(c).WorkspaceID, c.Params("id"))
	if err != nil {
		return err
	}
	return c.JSON(w)
}

// createWorkspace answers POST /api/admin/workspaces with 403: a workspace
// admin's token is never an operator's credential.
func (s *server) createWorkspace(*fiber.Ctx) error {
	return apperr.Forbiddenf("workspaces are created by an operator: appruntime workspace create NAME")
}

// updateWorkspace takes a merge patch: the fields it names replace the current ones.
func (s *server) updateWorkspace(c *fiber.Ctx) error {
	w, err := s.Admin.UpdateWorkspace(c.UserContext(), principalOf(c).WorkspaceID, adminActor(c), c.Params("id"), c.Body())
	if err != nil {
		return err
	}
	return c.JSON(w)
}

func (s *server) deleteWorkspace(c *fiber.Ctx) error {
	if err := s.Admin.DeleteWorkspace(c.UserContext(), principalOf(c).WorkspaceID, adminActor(c), c.Params("id")); err != nil {
		return err
	}
	return c.SendStatus(fiber.StatusNoContent)
}
