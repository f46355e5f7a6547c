package web

import (
	_ "embed"
	"fmt"

	"github.com/gofiber/fiber/v2"
)

// FaviconPath is where browsers ask for a site's icon: every top-level page
// of an origin asks for it unless the page links another.
const FaviconPath = "/favicon.ico"

// faviconMaxAgeSeconds is how long browsers keep the icon (a day).
const faviconMaxAgeSeconds = 86400

//go:embed favicon.svg
var favicon []byte

// MountFavicon answers GET /favicon.ico with the product's icon, an SVG
// (browsers take an SVG there by its Content-Type), cacheable for a day and
// open to anyone: without it every page the browser opens logs a 404.
// Mount it before any route or middleware that needs a signed-in user.
func MountFavicon(app *fiber.App) {
	app.Get(FaviconPath, func(c *fiber.Ctx) error {
		c.Set(fiber.HeaderContentType, "image/svg+xml")
		c.Set(fiber.HeaderCacheControl, fmt.Sprintf("public, max-age=%d", faviconMaxAgeSeconds))
		return c.Send(favicon)
	})
}
