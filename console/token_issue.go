package console

import (
	"github.com/gofiber/fiber/v2"

	"github.com/appruntime/appruntime/internal/admin"
	"github.com/appruntime/appruntime/internal/apperr"
	"github.com/appruntime/appruntime/models"
)

// issueToken answers POST /tokens: the token is issued and its secret shown
// on this one page, never again. A host token is for the chosen user, an
// agent token for the chosen agent; a refusal shows the form again.
func (s *server) issueToken(c *fiber.Ctx) error {
	a := adminOf(c)
	in := admin.TokenInput{Scope: c.FormValue("scope"), Name: c.FormValue("name")}
	switch in.Scope {
	case models.ScopeHost:
		in.UserID = formID(c, "user_id")
	case models.ScopeAgent:
		in.AgentID = formID(c, "agent_id")
	}
	tok, err := s.Admin.IssueToken(c.UserContext(), a.WorkspaceID, a.actor(), in)
	if apperr.Is(err, apperr.Invalid) {
		_, status, msg := apperr.Public(err)
		return s.renderTokens(c, status, in, msg)
	}
	if err != nil {
		return err
	}
	return s.render(c, fiber.StatusCreated, "token_issued", "Token issued", "tokens", tok)
}

// formID returns a form field that names an id, or nil when it is empty.
func formID(c *fiber.Ctx, name string) *string {
	v := c.FormValue(name)
	if v == "" {
		return nil
	}
	return &v
}
