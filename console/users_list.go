package console

import (
	"github.com/gofiber/fiber/v2"

	"github.com/appruntime/appruntime/internal/admin"
	"github.com/appruntime/appruntime/models"
)

// usersPage is the users list with the form that creates one.
type usersPage struct {
	Users []admin.UserView
	Roles []string
	// Form is what the create form holds (the refused input, after a
	// refusal; never the password).
	Form    admin.UserInput
	Refusal formRefusal
}

// userRoles are the roles a user may have.
var userRoles = []string{models.RoleReviewer, models.RoleAdmin}

// userFormFields are the user forms' fields, named as the admin API names
// them (and as its refusals do).
var userFormFields = []string{"email", "name", "role", "password"}

// listUsers answers GET /users: the workspace's admins and reviewers.
func (s *server) listUsers(c *fiber.Ctx) error {
	return s.renderUsers(c, fiber.StatusOK, admin.UserInput{Role: models.RoleReviewer}, formRefusal{})
}

// renderUsers renders the users page with form in the create form.
func (s *server) renderUsers(c *fiber.Ctx, status int, form admin.UserInput, r formRefusal) error {
	list, err := s.Admin.ListUsers(c.UserContext(), adminOf(c).WorkspaceID)
	if err != nil {
		return err
	}
	form.Password = ""
	return s.renderView(c, status, "users", view{Title: "Users", Section: "users", Error: r.Page(),
		Data: usersPage{Users: list, Roles: userRoles, Form: form, Refusal: r}})
}
