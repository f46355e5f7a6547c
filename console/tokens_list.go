package console

import (
	"github.com/gofiber/fiber/v2"

	"github.com/appruntime/appruntime/internal/admin"
	"github.com/appruntime/appruntime/models"
)

// tokensPage is the tokens list with the form that issues one.
type tokensPage struct {
	Tokens []admin.TokenView
	Users  []admin.UserView
	Agents []admin.AgentView
	Scopes []string
	// UserEmails and AgentNames name a token's owner.
	UserEmails map[string]string
	AgentNames map[string]string
	// Form is what the issue form holds (the refused input, after a refusal).
	Form admin.TokenInput
}

// tokenScopes are the scopes the issue form offers.
var tokenScopes = []string{models.ScopeHost, models.ScopeAgent, models.ScopeAdmin}

// listTokens answers GET /tokens: every token, revoked ones included, never
// a secret.
func (s *server) listTokens(c *fiber.Ctx) error {
	return s.renderTokens(c, fiber.StatusOK, admin.TokenInput{Scope: models.ScopeHost}, "")
}

// renderTokens renders the tokens page with form in the issue form.
func (s *server) renderTokens(c *fiber.Ctx, status int, form admin.TokenInput, refusal string) error {
	ctx, a := c.UserContext(), adminOf(c)
	tokens, err := s.Admin.ListTokens(ctx, a.WorkspaceID)
	if err != nil {
		return err
	}
	users, err := s.Admin.ListUsers(ctx, a.WorkspaceID)
	if err != nil {
		return err
	}
	agents, err := s.Admin.ListAgents(ctx, a.WorkspaceID)
	if err != nil {
		return err
	}
	p := tokensPage{Tokens: tokens, Users: users, Agents: agents, Scopes: tokenScopes, Form: form,
		UserEmails: make(map[string]string, len(users)), AgentNames: make(map[string]string, len(agents))}
	for _, u := range users {
		p.UserEmails[u.ID] = u.Email
	}
	for _, ag := range agents {
		p.AgentNames[ag.ID] = ag.Name
	}
	return s.renderView(c, status, "tokens", view{Title: "API tokens", Section: "tokens", Error: refusal, Data: p})
}
