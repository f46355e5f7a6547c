package console

import (
	"encoding/json"

	"github.com/gofiber/fiber/v2"

	"github.com/appruntime/appruntime/internal/admin"
	"github.com/appruntime/appruntime/models"
)

// saveUser answers POST /users/:id (email, name, role): a merge patch of
// those fields, as PATCH /api/admin/users/:id takes it, audited as
// user.update. The workspace's last admin keeps the role (409).
func (s *server) saveUser(c *fiber.Ctx) error {
	a := adminOf(c)
	in := admin.UserInput{Email: c.FormValue("email"), Name: c.FormValue("name"), Role: c.FormValue("role")}
	patch, err := json.Marshal(map[string]string{"email": in.Email, "name": in.Name, "role": in.Role})
	if err != nil {
		return err
	}
	_, err = s.Admin.UpdateUser(c.UserContext(), a.WorkspaceID, a.actor(), c.Params("id"), patch)
	if r, refused := refuseForm(err, userFormFields...); refused {
		if r.Field == "" && r.Status == fiber.StatusConflict {
			r.Field = "role" // the workspace's last admin keeps the role
		}
		return s.renderUser(c, r.Status, &in, r)
	}
	if err != nil {
		return err
	}
	if c.Params("id") == a.ID && in.Role != models.RoleAdmin {
		// The admin made themselves a reviewer: the admin pages are closed to
		// them from now on.
		return c.Redirect(reviewPath, fiber.StatusSeeOther)
	}
	return redirectTo(c, "/users/"+c.Params("id"), "user_saved")
}
