package api

import (
	"github.com/gofiber/fiber/v2"

	"github.com/appruntime/appruntime/internal/admin"
	"github.com/appruntime/appruntime/models"
)

// adminUserRoutes mounts /api/admin/users (console admins and reviewers).
func (s *server) adminUserRoutes(app *fiber.App) {
	adminOnly := s.requireToken(models.ScopeAdmin)
	app.Get("/api/admin/users", adminOnly, s.listUsers)
	app.Post("/api/admin/users", adminOnly, s.createUser)
	app.Get("/api/admin/users/:id", adminOnly, s.getUser)
	app.Patch("/api/admin/users/:id", adminOnly, s.updateUser)
	app.Put("/api/admin/users/:id", adminOnly, s.updateUser)
	app.Delete("/api/admin/users/:id", adminOnly, s.deleteUser)
}

func (s *server) listUsers(c *fiber.Ctx) error {
	list, err := s.Admin.ListUsers(c.UserContext(), principalOf(c).WorkspaceID)
	if err != nil {
		return err
	}
	return c.JSON(fiber.Map{"users": list})
}

func (s *server) getUser(c *fiber.Ctx) error {
	u, err := s.Admin.GetUser(c.UserContext(), principalOf(c).WorkspaceID, c.Params("id"))
	if err != nil {
		return err
	}
	return c.JSON(u)
}

// createUser answers POST /api/admin/users {"email","name","role","password"}.
func (s *server) createUser(c *fiber.Ctx) error {
	var in admin.UserInput
	if err := decodeStrictBody(c, &in); err != nil {
		return err
	}
	u, err := s.Admin.CreateUser(c.UserContext(), principalOf(c).WorkspaceID, adminActor(c), in)
	if err != nil {
		return err
	}
	return c.Status(fiber.StatusCreated).JSON(u)
}

// updateUser takes a merge patch; a "password" in it replaces the current one.
func (s *server) updateUser(c *fiber.Ctx) error {
	u, err := s.Admin.UpdateUser(c.UserContext(), principalOf(c).WorkspaceID, adminActor(c), c.Params("id"), c.Body())
	if err != nil {
		return err
	}
	return c.JSON(u)
}

func (s *server) deleteUser(c *fiber.Ctx) error {
	if err := s.Admin.DeleteUser(c.UserContext(), principalOf(c).WorkspaceID, adminActor(c), c.Params("id")); err != nil {
		return err
	}
	return c.SendStatus(fiber.StatusNoContent)
}
