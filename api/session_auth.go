package api

import (
	"github.com/gofiber/fiber/v2"

	"github.com/appruntime/appruntime/internal/apperr"
	"github.com/appruntime/appruntime/internal/auth"
	"github.com/appruntime/appruntime/internal/session"
	"github.com/appruntime/appruntime/internal/tracing"
	"github.com/appruntime/appruntime/internal/web"
)

const sessionKey = "session"

// requireSession admits requests bearing a valid, unrevoked session token
// (the runtime verbs) and makes its claims available through sessionOf. The
// claims, never the request body, say which task, step and binding a call is
// on. The body is read only once the token is verified (web.ReadBody).
func (s *server) requireSession() fiber.Handler {
	return func(c *fiber.Ctx) error {
		token, ok := auth.BearerToken(c.Get(fiber.HeaderAuthorization))
		if !ok {
			return apperr.Unauthenticatedf("session token required")
		}
		// The claims are the issuer's own copy (VerifyShared): a pointer in
		// the locals costs no allocation, the claims' value would.
		claims, err := s.Sessions.VerifyShared(c.UserContext(), token)
		if err != nil {
			return err
		}
		c.Locals(sessionKey, claims)
		tracing.SetWorkspace(c.UserContext(), claims.WorkspaceID)
		if err := web.ReadBody(c); err != nil {
			return err
		}
		return c.Next()
	}
}

// sessionOf returns the claims requireSession verified.
func sessionOf(c *fiber.Ctx) session.Claims {
	if claims, ok := c.Locals(sessionKey).(*session.Claims); ok {
		return *claims
	}
	return session.Claims{}
}
