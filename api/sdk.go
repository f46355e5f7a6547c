package api

import (
	"github.com/gofiber/fiber/v2"
	"github.com/gofiber/fiber/v2/middleware/adaptor"

	"github.com/appruntime/appruntime/internal/sdk"
)

// sdkRoutes serves the bundle SDK, GET and HEAD /sdk/appruntime.js, with no
// token (a bundle imports it as a module from its sandboxed iframe) and its
// sha256 as the ETag (internal/sdk).
func (s *server) sdkRoutes(app *fiber.App) {
	serve := adaptor.HTTPHandler(sdk.Handler())
	h := func(c *fiber.Ctx) error {
		// The SDK is cached and revalidated by its ETag: its own
		// Cache-Control replaces the API's no-store, and its nosniff the
		// API's (the adaptor adds headers, it does not replace them).
		c.Response().Header.Del(fiber.HeaderCacheControl)
		c.Response().Header.Del(fiber.HeaderXContentTypeOptions)
		return serve(c)
	}
	app.Get(sdk.Path, h)
	app.Head(sdk.Path, h)
}
