package console

import (
	"strconv"
	"strings"
	"time"

	"github.com/gofiber/fiber/v2"

	"github.com/appruntime/appruntime/internal/apperr"
	"github.com/appruntime/appruntime/internal/limit"
	"github.com/appruntime/appruntime/internal/web"
	"github.com/appruntime/appruntime/models"
)

// loginPath is the sign-in form's route (GET) and action (POST).
const loginPath = "/login"

// loginForm is the sign-in page's data.
type loginForm struct {
	Email string
	Next  string
}

// showLogin answers GET /login: the sign-in form. An admin already signed in
// goes straight on; anyone else gets an anonymous session whose CSRF token
// the form carries.
func (s *server) showLogin(c *fiber.Ctx) error {
	next := safeNext(c.Query("next"))
	cs, ok := sessionOf(c)
	if ok && cs.signedIn() {
		return c.Redirect(next, fiber.StatusSeeOther)
	}
	if !ok {
		s.setSession(c, cookieSession{SID: newSID(), Expires: time.Now().Add(loginFormTTL).Unix()})
	}
	return s.render(c, fiber.StatusOK, "login", "Sign in", "", loginForm{Next: next})
}

// errWrongLogin is the one answer to every refused sign-in: a wrong email
// or a wrong password, so that the form never tells which it was.
var errWrongLogin = apperr.Unauthenticatedf("wrong email or password")

// login answers POST /login (fields from the form body only). Tries are
// throttled per client address, per account and address, per account for
// unknown clients, and per known browser (limit.SignInThrottle; the device
// cookie names a browser the account signed in from): over any, the form
// comes back with 429 and Retry-After, the password unchecked. Admins and
// reviewers may sign in; a reviewer lands on the review pages. A successful
// sign-in clears the account's tries from that address and browser, makes
// the browser known to the account, and starts a new session (a new id, so
// a session id planted before sign-in is worthless).
func (s *server) login(c *fiber.Ctx) error {
	ctx := c.UserContext()
	form := loginForm{Email: postValue(c, "email"), Next: safeNext(postValue(c, "next"))}
	try := limit.SignInTry{Account: form.Email, Address: s.clientAddress(c), Device: s.deviceOf(c, form.Email)}
	if err := s.signIns.Attempt(ctx, try); err != nil {
		if apperr.Is(err, apperr.Unavailable) {
			// No try goes unmetered: without Redis nobody signs in.
			c.Set(fiber.HeaderRetryAfter, strconv.Itoa(web.UnavailableRetryAfter))
			return s.renderView(c, fiber.StatusServiceUnavailable, "login", view{Title: "Sign in", Data: form,
				Error: "Signing in is unavailable right now (the console cannot reach its Redis). Try again in a moment."})
		}
		if !apperr.Is(err, apperr.RateLimited) {
			return err
		}
		wait := strconv.Itoa(apperr.RetryAfterSeconds(err))
		c.Set(fiber.HeaderRetryAfter, wait)
		return s.renderView(c, fiber.StatusTooManyRequests, "login", view{Title: "Sign in", Data: form,
			Error: "Too many sign-in attempts. Try again in " + wait + " seconds."})
	}
	u, err := s.Admin.CheckPassword(ctx, form.Email, postValue(c, "password"))
	if err == nil && u.Role != models.RoleAdmin && u.Role != models.RoleReviewer {
		err = errWrongLogin
	}
	if err == nil && u.Role == models.RoleReviewer && !strings.HasPrefix(form.Next, reviewPath) {
		form.Next = reviewPath // a reviewer has the review pages only
	}
	if err != nil {
		if apperr.Is(err, apperr.Unauthenticated) {
			return s.renderView(c, fiber.StatusUnauthorized, "login", view{Title: "Sign in", Error: "Wrong email or password.", Data: form})
		}
		return err
	}
	if err := s.signIns.Succeeded(ctx, try); err != nil {
		return err
	}
	s.setDevice(c, form.Email)
	s.setSession(c, cookieSession{SID: newSID(), UserID: u.ID, WorkspaceID: u.WorkspaceID, Expires: time.Now().Add(SessionTTL).Unix()})
	return c.Redirect(form.Next, fiber.StatusSeeOther)
}

// clientAddress is the address sign-in tries are counted against: the
// client's (web.Proxies.ClientAddr: a trusted proxy's X-Forwarded-For), an
// IPv6 one by its /64 (what one client usually holds).
func (s *server) clientAddress(c *fiber.Ctx) string {
	ip := s.Proxies.ClientAddr(c)
	if ip.Is6() {
		if p, err := ip.Prefix(64); err == nil {
			return p.String()
		}
	}
	return ip.String()
}
