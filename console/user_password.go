package console

import (
	"crypto/rand"
	"encoding/base64"
	"encoding/json"

	"github.com/gofiber/fiber/v2"

	"github.com/appruntime/appruntime/internal/admin"
)

// generatedPasswordBytes is the randomness of a generated password (120
// bits, 20 characters).
const generatedPasswordBytes = 15

// newPassword returns a random password for a new or reset account.
func newPassword() string {
	b := make([]byte, generatedPasswordBytes)
	_, _ = rand.Read(b) // crypto/rand.Read never fails (Go 1.24+)
	return base64.RawURLEncoding.EncodeToString(b)
}

// userPasswordPage shows a generated password, this once.
type userPasswordPage struct {
	User     admin.UserView
	Password string
	// Created is set when the user was just created (else it was a reset).
	Created bool
}

// resetUserPassword answers POST /users/:id/password (password): a typed
// password, or an empty one generated and shown on this one page, replaces
// the user's, as a PATCH /api/admin/users/:id with a "password" does
// (audited as user.update with password_changed).
func (s *server) resetUserPassword(c *fiber.Ctx) error {
	a := adminOf(c)
	password := c.FormValue("password")
	generated := password == ""
	if generated {
		password = newPassword()
	}
	patch, err := json.Marshal(map[string]string{"password": password})
	if err != nil {
		return err
	}
	u, err := s.Admin.UpdateUser(c.UserContext(), a.WorkspaceID, a.actor(), c.Params("id"), patch)
	if r, refused := refuseForm(err, "password"); refused {
		return s.renderUser(c, r.Status, nil, r)
	}
	if err != nil {
		return err
	}
	if !generated {
		return redirectTo(c, "/users/"+u.ID, "password_reset")
	}
	return s.render(c, fiber.StatusOK, "user_password", "Password reset", "users", userPasswordPage{User: u, Password: password})
}
