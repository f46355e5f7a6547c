package api

import (
	"github.com/gofiber/fiber/v2"

	"github.com/appruntime/appruntime/internal/admin"
	"github.com/appruntime/appruntime/models"
)

// adminIntegrationRoutes mounts /api/admin/integrations. Secrets are
// write-only: replies list the names of the secrets that are set
// ("secrets_set"), never their values.
func (s *server) adminIntegrationRoutes(app *fiber.App) {
	adminOnly := s.requireToken(models.ScopeAdmin)
	app.Get("/api/admin/integrations", adminOnly, s.listIntegrations)
	app.Post("/api/admin/integrations", adminOnly, s.createIntegration)
	app.Get("/api/admin/integrations/:id", adminOnly, s.getIntegration)
	app.Patch("/api/admin/integrations/:id", adminOnly, s.updateIntegration)
	app.Put("/api/admin/integrations/:id", adminOnly, s.updateIntegration)
	app.Delete("/api/admin/integrations/:id", adminOnly, s.deleteIntegration)
	app.Post("/api/admin/integrations/:id/test", adminOnly, s.testIntegration)
}

func (s *server) listIntegrations(c *fiber.Ctx) error {
	list, err := s.Admin.ListIntegrations(c.UserContext(), principalOf(c).WorkspaceID)
	if err != nil {
		return err
	}
	return c.JSON(fiber.Map{"integrations": list})
}

func (s *server) getIntegration(c *fiber.Ctx) error {
	i, err := s.Admin.GetIntegration(c.UserContext(), principalOf(c).WorkspaceID, c.Params("id"))
	if err != nil {
		return err
	}
	return c.JSON(i)
}

// createIntegration answers POST /api/admin/integrations {"name","kind",
// "base_url","config","secrets"}.
func (s *server) createIntegration(c *fiber.Ctx) error {
	var in admin.IntegrationInput
	if err := decodeStrictBody(c, &in); err != nil {
		return err
	}
	i, err := s.Admin.CreateIntegration(c.UserContext(), principalOf(c).WorkspaceID, adminActor(c), in)
	if err != nil {
		return err
	}
	return c.Status(fiber.StatusCreated).JSON(i)
}

// updateIntegration takes a merge patch; "secrets" merges key by key (null
// removes a key), so an edit never needs the current secret values.
func (s *server) updateIntegration(c *fiber.Ctx) error {
	i, err := s.Admin.UpdateIntegration(c.UserContext(), principalOf(c).WorkspaceID, adminActor(c), c.Params("id"), c.Body())
	if err != nil {
		return err
	}
	return c.JSON(i)
}

func (s *server) deleteIntegration(c *fiber.Ctx) error {
	if err := s.Admin.DeleteIntegration(c.UserContext(), principalOf(c).WorkspaceID, adminActor(c), c.Params("id")); err != nil {
		return err
	}
	return c.SendStatus(fiber.StatusNoContent)
}

// testIntegration answers POST /api/admin/integrations/:id/test: it connects
// as the integration's real calls do, through their guards (admin.Service.
// TestIntegration), and answers {"ok":true,"result"} with what it reached,
// or the error saying what failed. It changes nothing
// (docs/admins.md#the-console).
func (s *server) testIntegration(c *fiber.Ctx) error {
	result, err := s.Admin.TestIntegration(c.UserContext(), principalOf(c).WorkspaceID, c.Params("id"))
	if err != nil {
		return err
	}
	return c.JSON(fiber.Map{"ok": true, "result": result})
}
