package console

import (
	"time"

	"github.com/gofiber/fiber/v2"

	"github.com/appruntime/appruntime/internal/apperr"
	"github.com/appruntime/appruntime/internal/auth"
	"github.com/appruntime/appruntime/models"
)

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

// login answers POST /login. Only admins may sign in; a wrong email and a
// wrong password get the same answer. A successful sign-in starts a new
// session (a new id, so a session id planted before sign-in is worthless).
func (s *server) login(c *fiber.Ctx) error {
	form := loginForm{Email: c.FormValue("email"), Next: safeNext(c.FormValue("next"))}
	u, err := auth.CheckPassword(c.UserContext(), s.Store.DB, form.Email, c.FormValue("password"))
	if err != nil {
		if apperr.Is(err, apperr.Unauthenticated) {
			return s.renderView(c, fiber.StatusUnauthorized, "login", view{Title: "Sign in", Error: "Wrong email or password.", Data: form})
		}
		return err
	}
	if u.Role != models.RoleAdmin {
		return s.renderView(c, fiber.StatusForbidden, "login", view{Title: "Sign in", Data: form,
			Error: "This console is for admins only. Reviewers review tasks in their host application, not here."})
	}
	s.setSession(c, cookieSession{SID: newSID(), UserID: u.ID, WorkspaceID: u.WorkspaceID, Expires: time.Now().Add(SessionTTL).Unix()})
	return c.Redirect(form.Next, fiber.StatusSeeOther)
}
