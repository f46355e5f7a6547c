package console

import (
	"time"

	"github.com/gofiber/fiber/v2"

	"github.com/appruntime/appruntime/internal/apperr"
)

// logout answers POST /logout: the session is ended on every console
// replica (its id is remembered in Redis until the cookie would have
// expired) and the cookie is cleared.
func (s *server) logout(c *fiber.Ctx) error {
	if cs, ok := sessionOf(c); ok {
		if ttl := time.Until(time.Unix(cs.Expires, 0)); ttl > 0 {
			if err := s.Redis.Set(c.UserContext(), s.endedKey(cs.SID), 1, ttl).Err(); err != nil {
				return apperr.Wrap(err, apperr.Unavailable, "the console cannot sign you out right now (its Redis does not answer); try again in a moment")
			}
		}
	}
	s.clearSession(c)
	return c.Redirect("/login?notice=signed_out", fiber.StatusSeeOther)
}
