package api

import (
	"github.com/gofiber/fiber/v2"

	"github.com/appruntime/appruntime/internal/openapi"
)

// OpenAPIPath serves the OpenAPI 3.1 document of every public endpoint.
const OpenAPIPath = "/api/openapi.json"

// OpenAPI is the document (internal/openapi), embedded in the binary. The
// api tests validate their traffic against it and check every mounted route
// is in it, so it cannot drift from the handlers.
var OpenAPI = openapi.Document

// openAPIRoutes serves the document with no token.
func (s *server) openAPIRoutes(app *fiber.App) {
	app.Get(OpenAPIPath, func(c *fiber.Ctx) error {
		c.Set(fiber.HeaderContentType, fiber.MIMEApplicationJSONCharsetUTF8)
		return c.Send(OpenAPI)
	})
}
