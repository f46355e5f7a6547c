package console

import (
	"github.com/gofiber/fiber/v2"
)

// revokeSession answers POST /sessions/:id/revoke: the session's token is
// refused by every API replica from now on.
func (s *server) revokeSession(c *fiber.Ctx) error {
	a := adminOf(c)
	if err := s.Artifacts.RevokeSession(c.UserContext(), a.WorkspaceID, a.actor(), c.Params("id")); err != nil {
		return err
	}
	return redirectTo(c, "/sessions", "revoked")
}
