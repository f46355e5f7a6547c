package console

import (
	"github.com/gofiber/fiber/v2"
)

// deleteUser answers POST /users/:id/delete as DELETE /api/admin/users/:id
// does: the account goes with its host tokens and app sessions (stopped at
// once), and the review tasks it held go back to the queue. The workspace's
// last admin is refused (409). The form's "confirm" box must be ticked.
func (s *server) deleteUser(c *fiber.Ctx) error {
	a := adminOf(c)
	if c.FormValue("confirm") != "yes" {
		return s.renderUser(c, fiber.StatusBadRequest, nil,
			formRefusal{Status: fiber.StatusBadRequest, Field: "confirm", Message: "tick the box to confirm what the deletion takes with it"})
	}
	err := s.Admin.DeleteUser(c.UserContext(), a.WorkspaceID, a.actor(), c.Params("id"))
	if r, refused := refuseForm(err); refused {
		r.Field = "confirm"
		return s.renderUser(c, r.Status, nil, r)
	}
	if err != nil {
		return err
	}
	if c.Params("id") == a.ID {
		// The admin deleted their own account: the session is gone with it.
		return c.Redirect(loginPath, fiber.StatusSeeOther)
	}
	return redirectTo(c, "/users", "user_deleted")
}
