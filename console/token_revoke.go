package console

import (
	"github.com/gofiber/fiber/v2"
)

// revokeToken answers POST /tokens/:id/revoke: the token stops
// authenticating at once.
func (s *server) revokeToken(c *fiber.Ctx) error {
	a := adminOf(c)
	if err := s.Admin.RevokeToken(c.UserContext(), a.WorkspaceID, a.actor(), c.Params("id")); err != nil {
		return err
	}
	return redirectTo(c, "/tokens", "token_revoked")
}
