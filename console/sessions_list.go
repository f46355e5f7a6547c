package console

import (
	"github.com/gofiber/fiber/v2"
)

// listSessions answers GET /sessions: the live app sessions (neither revoked
// nor expired), newest first, each with a revoke button.
func (s *server) listSessions(c *fiber.Ctx) error {
	list, err := s.Artifacts.LiveSessions(c.UserContext(), adminOf(c).WorkspaceID)
	if err != nil {
		return err
	}
	return s.render(c, fiber.StatusOK, "sessions", "Live sessions", "sessions", list)
}
