package console

import (
	"time"

	"github.com/gofiber/fiber/v2"

	"github.com/appruntime/appruntime/internal/limit"
)

// DeviceCookieName is the cookie a browser gets when an account signs in
// from it. Its sign-in tries for that account are then a budget of their
// own, apart from the pool every unknown client shares
// (limit.SignInThrottle), so that nobody else's guessing keeps the account's
// admin out of a browser they used before.
const DeviceCookieName = "appruntime_device"

// deviceTTL is how long a browser stays known to an account after its last
// sign-in there.
const deviceTTL = 180 * 24 * time.Hour

// deviceCookie is what the device cookie carries: a random id, the account
// it is known to (limit.SignInAccount of the email: no email in the cookie)
// and when it expires.
type deviceCookie struct {
	ID      string `json:"id"`
	Account string `json:"acct"`
	Expires int64  `json:"exp"`
}

// deviceOf returns the id of the request's device cookie when it is valid,
// unexpired and known to the account email names; "" otherwise.
func (s *server) deviceOf(c *fiber.Ctx, email string) string {
	var d deviceCookie
	if !s.verify(signDevice, c.Cookies(DeviceCookieName), &d) || d.ID == "" ||
		time.Now().Unix() >= d.Expires || d.Account != limit.SignInAccount(email) {
		return ""
	}
	return d.ID
}

// setDevice makes the browser known to the account email names, with a new
// id (so an old copy of the cookie stops counting as this browser's once
// its own tries are spent). The cookie goes back only to the sign-in form.
func (s *server) setDevice(c *fiber.Ctx, email string) {
	d := deviceCookie{ID: newSID(), Account: limit.SignInAccount(email), Expires: time.Now().Add(deviceTTL).Unix()}
	c.Cookie(&fiber.Cookie{
		Name: DeviceCookieName, Value: s.sign(signDevice, d), Path: loginPath,
		Expires: time.Unix(d.Expires, 0), HTTPOnly: true, SameSite: fiber.CookieSameSiteLaxMode, Secure: s.secureCookies,
	})
}
