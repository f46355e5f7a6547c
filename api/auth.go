package api

import (
	"github.com/gofiber/fiber/v2"

	"github.com/appruntime/appruntime/internal/apperr"
	"github.com/appruntime/appruntime/internal/auth"
	"github.com/appruntime/appruntime/internal/tracing"
	"github.com/appruntime/appruntime/internal/web"
)

const principalKey = "principal"

// requireToken admits requests bearing a valid API token of scope, makes its
// principal available to handlers through principalOf, and only then reads
// the request body (web.ReadBody): a body without a valid token is never read.
func (s *server) requireToken(scope string) fiber.Handler {
	return func(c *fiber.Ctx) error {
		token, ok := auth.BearerToken(c.Get(fiber.HeaderAuthorization))
		if !ok {
			return apperr.Unauthenticatedf("a valid %s token is required", scope)
		}
		p, err := s.Admin.VerifyToken(c.UserContext(), token, scope)
		if err != nil {
			return err
		}
		c.Locals(principalKey, p)
		tracing.SetWorkspace(c.UserContext(), p.WorkspaceID)
		if err := web.ReadBody(c); err != nil {
			return err
		}
		return c.Next()
	}
}

// principalOf returns the principal requireToken admitted.
func principalOf(c *fiber.Ctx) auth.Principal {
	p, _ := c.Locals(principalKey).(auth.Principal)
	return p
}
