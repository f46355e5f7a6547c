package console

import (
	"github.com/gofiber/fiber/v2"

	"github.com/appruntime/appruntime/internal/admin"
)

// createUser answers POST /users (email, name, role, password) as
// POST /api/admin/users does, audited as user.create. An empty password is
// generated and shown on this one page; a typed one is not shown again. A
// refusal shows the form again with the input and the message beside its
// field.
func (s *server) createUser(c *fiber.Ctx) error {
	a := adminOf(c)
	in := admin.UserInput{Email: c.FormValue("email"), Name: c.FormValue("name"), Role: c.FormValue("role"), Password: c.FormValue("password")}
	generated := in.Password == ""
	if generated {
		in.Password = newPassword()
	}
	u, err := s.Admin.CreateUser(c.UserContext(), a.WorkspaceID, a.actor(), in)
	if r, refused := refuseForm(err, userFormFields...); refused {
		return s.renderUsers(c, r.Status, in, r)
	}
	if err != nil {
		return err
	}
	if !generated {
		return redirectTo(c, "/users/"+u.ID, "user_created")
	}
	return s.render(c, fiber.StatusCreated, "user_password", "User created", "users", userPasswordPage{User: u, Password: in.Password, Created: true})
}
