package api

import (
	"context"

	"github.com/gofiber/fiber/v2"

	"github.com/appruntime/appruntime/internal/artifact"
	"github.com/appruntime/appruntime/internal/runtime"
	"github.com/appruntime/appruntime/internal/session"
	"github.com/appruntime/appruntime/internal/web"
)

// verbFunc is one runtime verb of runtime.Service: it takes the raw body.
type verbFunc func(ctx context.Context, c session.Claims, body []byte) (runtime.Result, error)

// runtimeRoutes mounts the runtime verbs bundles call: POST /read, /write,
// /action, /run and /capability under /api/app-runtime. Bundles run in an
// opaque-origin iframe and authenticate with a bearer token (no cookies), so
// every origin may call. A body must be declared application/json (415) and
// is read only once the session is verified, at most 256 KiB (bodyLimit).
func (s *server) runtimeRoutes(app *fiber.App) {
	g := app.Group(artifact.RuntimePath, runtimeCORS, requireJSON, s.requireSession())
	g.Post("/read", s.verb(s.Runtime.Read))
	g.Post("/write", s.verb(s.Runtime.Write))
	g.Post("/action", s.verb(s.Runtime.Action))
	g.Post("/run", s.verb(s.Runtime.Run))
	g.Post("/capability", s.verb(s.Runtime.Capability))
}

// verb runs fn on the body with the session's claims and renders the v1
// shape, or the v2 envelope when the request asked.
func (s *server) verb(fn verbFunc) fiber.Handler {
	return func(c *fiber.Ctx) error {
		res, err := fn(c.UserContext(), sessionOf(c), c.Request().Body())
		if err != nil {
			return err
		}
		if web.WantsV2(c) {
			return c.JSON(res.V2())
		}
		return c.JSON(res.Body)
	}
}

// runtimeCORS lets bundles (opaque origin, bearer token, no credentials) call
// the runtime from any origin, and answers preflights.
func runtimeCORS(c *fiber.Ctx) error {
	c.Set(fiber.HeaderAccessControlAllowOrigin, "*")
	c.Set(fiber.HeaderAccessControlExposeHeaders, "Retry-After, X-Request-Id")
	if c.Method() == fiber.MethodOptions {
		c.Set(fiber.HeaderAccessControlAllowMethods, "POST, OPTIONS")
		c.Set(fiber.HeaderAccessControlAllowHeaders, "Authorization, Content-Type, X-Request-Id, "+web.V2Header)
		c.Set(fiber.HeaderAccessControlMaxAge, "600")
		return c.SendStatus(fiber.StatusNoContent)
	}
	return c.Next()
}
