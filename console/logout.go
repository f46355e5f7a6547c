package console

import (
	"fmt"
	"time"

	"github.com/gofiber/fiber/v2"
)

// logout answers POST /logout: the session is ended on every console
// replica (its id is remembered in Redis until the cookie would have
// expired) and the cookie is cleared.
func (s *server) logout(c *fiber.Ctx) error {
	if cs, ok := sessionOf(c); ok {
		if ttl := time.Until(time.Unix(cs.Expires, 0)); ttl > 0 {
			if err := s.Redis.Set(c.UserContext(), s.endedKey(cs.SID), 1, ttl).Err(); err != nil {
				return fmt.Errorf("console: sign out: %w", err)
			}
		}
	}
	s.clearSession(c)
	return c.Redirect("/login?notice=signed_out", fiber.StatusSeeOther)
}
