package console

import (
	"github.com/gofiber/fiber/v2"

	"github.com/appruntime/appruntime/internal/admin"
)

// userPage is a user with the forms that change their name and role, reset
// their password and delete them.
type userPage struct {
	User  admin.UserView
	Roles []string
	// Self is set when the user is the signed-in admin.
	Self bool
	// Form is what the edit form holds (the refused input, after a refusal).
	Form    admin.UserInput
	Refusal formRefusal
}

// showUser answers GET /users/:id.
func (s *server) showUser(c *fiber.Ctx) error {
	return s.renderUser(c, fiber.StatusOK, nil, formRefusal{})
}

// renderUser renders the user page; form, when not nil, is the refused
// input of the edit form, kept in it.
func (s *server) renderUser(c *fiber.Ctx, status int, form *admin.UserInput, r formRefusal) error {
	a := adminOf(c)
	u, err := s.Admin.GetUser(c.UserContext(), a.WorkspaceID, c.Params("id"))
	if err != nil {
		return err
	}
	pg := userPage{User: u, Roles: userRoles, Self: u.ID == a.ID, Refusal: r,
		Form: admin.UserInput{Email: u.Email, Name: u.Name, Role: u.Role}}
	if form != nil {
		pg.Form = *form
		pg.Form.Password = ""
	}
	return s.renderView(c, status, "user", view{Title: "User " + u.Email, Section: "users", Error: r.Page(), Data: pg})
}
