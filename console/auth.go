package console

import (
	"bytes"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/gofiber/fiber/v2"
	"github.com/redis/go-redis/v9"

	"github.com/appruntime/appruntime/internal/admin"
	"github.com/appruntime/appruntime/internal/apperr"
	"github.com/appruntime/appruntime/models"
)

// SessionTTL is how long a console sign-in lasts.
const SessionTTL = 12 * time.Hour

// loginFormTTL is how long the anonymous session behind a sign-in form
// lasts: its CSRF token is what the form posts back.
const loginFormTTL = time.Hour

// CookieName is the console's session cookie.
const CookieName = "appruntime_console"

// CSRFField is the hidden form field every non-GET request must carry.
const CSRFField = "csrf"

// CSRFHeader carries the CSRF token of a request a page script sends.
const CSRFHeader = "X-CSRF-Token"

// Domain separators of what the console key signs, so that a value signed
// for one use is never accepted for another.
const (
	signCookie = "appruntime console cookie v1\x00"
	signCSRF   = "appruntime console csrf v1\x00"
	signDevice = "appruntime console device v1\x00"
)

// Locals keys.
const (
	localSession = "console.session"
	localAdmin   = "console.admin"
)

// cookieSession is what the signed cookie carries. SID is random per
// sign-in (and per anonymous visit to the sign-in form); the CSRF token is
// derived from it. UserID and WorkspaceID are empty before sign-in.
type cookieSession struct {
	SID         string `json:"sid"`
	UserID      string `json:"uid,omitempty"`
	WorkspaceID string `json:"ws,omitempty"`
	Expires     int64  `json:"exp"`
}

// signedIn reports whether the session belongs to a signed-in user.
func (cs cookieSession) signedIn() bool { return cs.UserID != "" && cs.WorkspaceID != "" }

// signedAdmin is the admin a request runs for.
type signedAdmin struct {
	admin.UserView
	WorkspaceID string
}

// actor names the admin in audit entries and feed rows.
func (a signedAdmin) actor() string { return "user:" + a.ID }

// encodeCookie signs cs: base64url(JSON) "." base64url(HMAC-SHA256).
func (s *server) encodeCookie(cs cookieSession) string { return s.sign(signCookie, cs) }

// decodeCookie verifies and decodes a cookie value; a bad signature, a
// malformed value or an expired session is refused.
func (s *server) decodeCookie(value string, now time.Time) (cookieSession, bool) {
	var cs cookieSession
	if !s.verify(signCookie, value, &cs) || cs.SID == "" || now.Unix() >= cs.Expires {
		return cookieSession{}, false
	}
	return cs, true
}

// sign is v signed for domain (one of the sign* separators):
// base64url(JSON) "." base64url(HMAC-SHA256).
func (s *server) sign(domain string, v any) string {
	raw, _ := json.Marshal(v)
	payload := base64.RawURLEncoding.EncodeToString(raw)
	return payload + "." + base64.RawURLEncoding.EncodeToString(s.mac(domain, payload))
}

// verify decodes value, signed for domain, into v; a bad signature or a
// malformed value is refused.
func (s *server) verify(domain, value string, v any) bool {
	payload, sig, ok := strings.Cut(value, ".")
	if !ok {
		return false
	}
	got, err := base64.RawURLEncoding.DecodeString(sig)
	if err != nil || !hmac.Equal(got, s.mac(domain, payload)) {
		return false
	}
	raw, err := base64.RawURLEncoding.DecodeString(payload)
	return err == nil && json.Unmarshal(raw, v) == nil
}

// csrfToken is the CSRF token of a session: an HMAC of its id, so that it
// needs no storage and dies with the session.
func (s *server) csrfToken(cs cookieSession) string {
	return base64.RawURLEncoding.EncodeToString(s.mac(signCSRF, cs.SID))
}

func (s *server) mac(domain, msg string) []byte {
	m := hmac.New(sha256.New, s.cookieKey)
	m.Write([]byte(domain))
	m.Write([]byte(msg))
	return m.Sum(nil)
}

// newSID returns a fresh random session id.
func newSID() string {
	b := make([]byte, 24)
	if _, err := rand.Read(b); err != nil {
		panic(fmt.Sprintf("console: random: %v", err))
	}
	return base64.RawURLEncoding.EncodeToString(b)
}

// setSession sends cs as the session cookie.
func (s *server) setSession(c *fiber.Ctx, cs cookieSession) {
	c.Cookie(&fiber.Cookie{
		Name: CookieName, Value: s.encodeCookie(cs), Path: "/",
		Expires: time.Unix(cs.Expires, 0), HTTPOnly: true, SameSite: fiber.CookieSameSiteLaxMode, Secure: s.secureCookies,
	})
	c.Locals(localSession, cs)
}

// clearSession removes the session cookie.
func (s *server) clearSession(c *fiber.Ctx) {
	c.Cookie(&fiber.Cookie{
		Name: CookieName, Value: "", Path: "/", Expires: time.Unix(0, 0), MaxAge: -1,
		HTTPOnly: true, SameSite: fiber.CookieSameSiteLaxMode, Secure: s.secureCookies,
	})
}

// endedKey marks a session id signed out until the cookie would expire.
func (s *server) endedKey(sid string) string { return s.KeyPrefix + "console:ended:" + sid }

// loadSession reads the session cookie. A valid, unexpired cookie that was
// not signed out is put in Locals; anything else is ignored (the request is
// then anonymous). When Redis cannot say whether the session was signed
// out, the request is a 503 (never admitted unchecked).
func (s *server) loadSession(c *fiber.Ctx) error {
	cs, ok := s.decodeCookie(c.Cookies(CookieName), time.Now())
	if ok {
		err := s.Redis.Get(c.UserContext(), s.endedKey(cs.SID)).Err()
		switch {
		case err == nil:
			ok = false // signed out
		case !errors.Is(err, redis.Nil):
			return apperr.Wrap(err, apperr.Unavailable, "the console cannot check its sessions right now (its Redis does not answer); try again in a moment")
		}
	}
	if ok {
		c.Locals(localSession, cs)
	}
	return c.Next()
}

// sessionOf returns the request's session, if any.
func sessionOf(c *fiber.Ctx) (cookieSession, bool) {
	cs, ok := c.Locals(localSession).(cookieSession)
	return cs, ok
}

// adminOf returns the admin requireAdmin admitted.
func adminOf(c *fiber.Ctx) signedAdmin {
	a, _ := c.Locals(localAdmin).(signedAdmin)
	return a
}

// errCSRF is the 403 of a state-changing request without the form's token.
var errCSRF = apperr.Forbiddenf("this form has expired or did not come from this console: reload the page and try again")

// checkCSRF refuses with 403 every request other than GET and HEAD that
// does not carry the CSRF token of the request's session in its form body
// (CSRFField) or in CSRFHeader. A token in the URL is not looked at: URLs
// end up in logs, histories and Referer headers.
func (s *server) checkCSRF(c *fiber.Ctx) error {
	if c.Method() == fiber.MethodGet || c.Method() == fiber.MethodHead {
		return c.Next()
	}
	cs, ok := sessionOf(c)
	if !ok {
		return errCSRF
	}
	got := c.Get(CSRFHeader)
	if got == "" {
		got = postValue(c, CSRFField)
	}
	if got == "" || !hmac.Equal([]byte(got), []byte(s.csrfToken(cs))) {
		return errCSRF
	}
	if formHoldsNUL(c) {
		return errFormNUL
	}
	return c.Next()
}

// errFormNUL refuses a form with a NUL character in a field: no Postgres
// text can store one, and the save would fail as the server's error.
var errFormNUL = apperr.Invalidf("a form field holds a NUL character, which cannot be stored")

// formHoldsNUL reports whether a field of the request's form body
// (application/x-www-form-urlencoded) holds a NUL byte, in its name or value.
func formHoldsNUL(c *fiber.Ctx) bool {
	found := false
	c.Request().PostArgs().VisitAll(func(k, v []byte) {
		found = found || bytes.IndexByte(k, 0) >= 0 || bytes.IndexByte(v, 0) >= 0
	})
	return found
}

// postValue returns a field of the request's form body
// (application/x-www-form-urlencoded, as the console's forms are sent, or
// multipart/form-data, as the bundle upload is); unlike Ctx.FormValue it
// never falls back to the query string.
func postValue(c *fiber.Ctx, name string) string {
	if v := c.Request().PostArgs().Peek(name); len(v) > 0 {
		return string(v)
	}
	if form, err := c.Request().MultipartForm(); err == nil {
		if vs := form.Value[name]; len(vs) > 0 {
			return vs[0]
		}
	}
	return ""
}

// requireAdmin admits requests of a signed-in user who is, right now, an
// admin of the session's workspace (a user deleted or made a reviewer since
// signing in is out at once). Anonymous page requests are redirected to the
// sign-in form, which brings them back afterwards.
func (s *server) requireAdmin(c *fiber.Ctx) error {
	return s.requireRole(c, models.RoleAdmin)
}

// requireReviewer admits a signed-in reviewer or admin: the review pages.
func (s *server) requireReviewer(c *fiber.Ctx) error {
	return s.requireRole(c, models.RoleAdmin, models.RoleReviewer)
}

// errReviewerOnly is the 403 of a reviewer on an admin page: they see the
// review pages and nothing of the admin console.
var errReviewerOnly = apperr.Forbiddenf("reviewers see the review pages only: go to /review")

// requireRole admits a signed-in user whose role, right now, is one of
// roles; a reviewer elsewhere is refused with 403.
func (s *server) requireRole(c *fiber.Ctx, roles ...string) error {
	cs, ok := sessionOf(c)
	if ok && cs.signedIn() {
		u, err := s.Admin.GetUser(c.UserContext(), cs.WorkspaceID, cs.UserID)
		switch {
		case err == nil && slices.Contains(roles, u.Role):
			c.Locals(localAdmin, signedAdmin{UserView: u, WorkspaceID: cs.WorkspaceID})
			return c.Next()
		case err == nil && u.Role == models.RoleReviewer:
			c.Locals(localAdmin, signedAdmin{UserView: u, WorkspaceID: cs.WorkspaceID})
			return errReviewerOnly
		case err != nil && !apperr.Is(err, apperr.NotFound):
			return err
		}
		s.clearSession(c)
	}
	if c.Method() != fiber.MethodGet && c.Method() != fiber.MethodHead {
		return apperr.Unauthenticatedf("your console session has ended: sign in again")
	}
	return c.Redirect("/login?next="+url.QueryEscape(c.OriginalURL()), fiber.StatusSeeOther)
}

// errNotOperator is the 403 of a queue action by an admin who is not an operator.
var errNotOperator = apperr.Forbiddenf("the queues serve every workspace: only the deployment's operators (OPERATOR_USER_IDS) may pause them or act on their tasks")

// isOperator reports whether a is one of the deployment's operators.
func (s *server) isOperator(a signedAdmin) bool {
	return a.ID != "" && slices.Contains(s.OperatorUserIDs, a.ID)
}

// requireOperator admits, after requireAdmin, an admin who is one of the
// deployment's operators (Services.OperatorUserIDs).
func (s *server) requireOperator(c *fiber.Ctx) error {
	if !s.isOperator(adminOf(c)) {
		return errNotOperator
	}
	return c.Next()
}

// safeNext returns next when it is a path on this console, else "/", so the
// sign-in form cannot be used to send an admin to another site.
func safeNext(next string) string {
	if !strings.HasPrefix(next, "/") || strings.HasPrefix(next, "//") || strings.ContainsAny(next, "\\\r\n") {
		return "/"
	}
	if u, err := url.Parse(next); err != nil || u.Host != "" || u.Scheme != "" {
		return "/"
	}
	return next
}
