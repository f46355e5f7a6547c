package api

import (
	"github.com/gofiber/fiber/v2"

	"github.com/appruntime/appruntime/internal/admin"
	"github.com/appruntime/appruntime/models"
)

// adminTokenRoutes mounts /api/admin/tokens. Issuing returns the secret
// ("token") once; lists never carry it; DELETE revokes.
func (s *server) adminTokenRoutes(app *fiber.App) {
	adminOnly := s.requireToken(models.ScopeAdmin)
	app.Get("/api/admin/tokens", adminOnly, s.listTokens)
	app.Post("/api/admin/tokens", adminOnly, s.issueToken)
	app.Get("/api/admin/tokens/:id", adminOnly, s.getToken)
	app.Delete("/api/admin/tokens/:id", adminOnly, s.revokeToken)
}

func (s *server) listTokens(c *fiber.Ctx) error {
	list, err := s.Admin.ListTokens(c.UserContext(), principalOf(c).WorkspaceID)
	if err != nil {
		return err
	}
	return c.JSON(fiber.Map{"tokens": list})
}

func (s *server) getToken(c *fiber.Ctx) error {
	t, err := s.Admin.GetToken(c.UserContext(), principalOf(c).WorkspaceID, c.Params("id"))
	if err != nil {
		return err
	}
	return c.JSON(t)
}

// issueToken answers POST /api/admin/tokens {"scope","name","user_id"|"agent_id"}.
func (s *server) issueToken(c *fiber.Ctx) error {
	var in admin.TokenInput
	if err := decodeStrictBody(c, &in); err != nil {
		return err
	}
	t, err := s.Admin.IssueToken(c.UserContext(), principalOf(c).WorkspaceID, adminActor(c), in)
	if err != nil {
		return err
	}
	return c.Status(fiber.StatusCreated).JSON(t)
}

func (s *server) revokeToken(c *fiber.Ctx) error {
	if err := s.Admin.RevokeToken(c.UserContext(), principalOf(c).WorkspaceID, adminActor(c), c.Params("id")); err != nil {
		return err
	}
	return c.SendStatus(fiber.StatusNoContent)
}
