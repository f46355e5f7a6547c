package api

import "github.com/gofiber/fiber/v2"

// JWKSPath is where the public keys of agent tools' identity tokens are
// published: a component verifies the Authorization of an app target's
// request with them (EdDSA, kid, iss = PUBLIC_API_URL, aud = its
// integration id).
const JWKSPath = "/.well-known/jwks.json"

// mountJWKS publishes the identity keys; they are public and change only
// with SESSION_KEYS, so shared caches may keep them for five minutes.
func (s *server) mountJWKS(app *fiber.App) {
	app.Get(JWKSPath, func(c *fiber.Ctx) error {
		c.Set(fiber.HeaderCacheControl, "public, max-age=300")
		return c.JSON(s.Identity.JWKS())
	})
}
