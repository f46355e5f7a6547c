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

// openAPIRoutes serves the document with no token, naming this
// deployment's PUBLIC_API_URL as its server. The embedded document always
// decodes (internal/openapi's tests say so); should it not, the committed
// one is served as it is.
func (s *server) openAPIRoutes(app *fiber.App) {
	doc := OpenAPI
	if s.PublicAPIURL != "" {
		named, err := openapi.ForServer(s.PublicAPIURL)
		if err != nil {
			s.Log.Error("api: the OpenAPI document cannot name this deployment's server", "err", err)
		} else {
			doc = named
		}
	}
	app.Get(OpenAPIPath, func(c *fiber.Ctx) error {
		c.Set(fiber.HeaderContentType, fiber.MIMEApplicationJSONCharsetUTF8)
		return c.Send(doc)
	})
}
