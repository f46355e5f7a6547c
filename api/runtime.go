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
	g.Post("/read", s.verb("read", s.Runtime.Read))
	g.Post("/write", s.verb("write", s.Runtime.Write))
	g.Post("/action", s.verb("action", s.Runtime.Action))
	g.Post("/run", s.verb("run", s.Runtime.Run))
	g.Post("/capability", s.verb("capability", s.Runtime.Capability))
}

// verb runs fn, the verb called name, on the body with the session's
// claims, once the session's kind allows the verb (runtime.Authorize) and renders the v1 shape, or the v2 envelope when the request
// asked. It leaves the op's kind for the metrics (observe).
func (s *server) verb(name string, fn verbFunc) fiber.Handler {
	return func(c *fiber.Ctx) error {
		claims, body := sessionOf(c), c.Request().Body()
		err := s.Runtime.Authorize(c.UserContext(), claims, name, body)
		var res runtime.Result
		if err == nil {
			res, err = fn(c.UserContext(), claims, body)
		}
		if err != nil {
			c.Locals(verbKindKey{}, kindValue(s.Runtime.OpKind(c.UserContext(), claims, name, body)))
			return err
		}
		c.Locals(verbKindKey{}, kindValue(res.Kind))
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
