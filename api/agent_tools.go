package api

import (
	"errors"

	"github.com/gofiber/fiber/v2"
	"github.com/gofiber/fiber/v2/middleware/adaptor"

	"github.com/appruntime/appruntime/internal/agentmcp"
	"github.com/appruntime/appruntime/internal/apperr"
	"github.com/appruntime/appruntime/models"
)

// agentToolRoutes mounts an agent's own view of its tools (agent token):
// the list in the shapes LLM APIs take, and the MCP server.
func (s *server) agentToolRoutes(app *fiber.App) {
	app.Get("/api/agent/tools", s.requireToken(models.ScopeAgent), s.listOwnAgentTools)
	mcpAuth := s.challengeBearer(s.requireToken(models.ScopeAgent))
	app.Post("/mcp", mcpAuth, s.serveMCP)
	app.Get("/mcp", mcpAuth, s.serveMCP)
}

// listOwnAgentTools answers GET /api/agent/tools[?format=] with the
// agent's tools (its declarations, then its app tools) in the format asked
// for (agentmcp.Formats; an unknown one is 400).
func (s *server) listOwnAgentTools(c *fiber.Ctx) error {
	tools, err := s.AgentTools.Tools(c.UserContext(), agentCaller(c))
	if err != nil {
		return err
	}
	format := c.Query("format")
	list, err := agentmcp.Render(tools, format)
	if err != nil {
		return err
	}
	if format == "" {
		format = agentmcp.FormatNative
	}
	return c.JSON(fiber.Map{"format": format, "tools": list})
}

// serveMCP answers /mcp (Streamable HTTP, stateless) for the token's agent
// with the SDK's handler over the agent's tools.
func (s *server) serveMCP(c *fiber.Ctx) error {
	caller := agentCaller(c)
	tools, err := s.AgentTools.Tools(c.UserContext(), caller)
	if err != nil {
		return err
	}
	return adaptor.HTTPHandler(s.AgentTools.Handler(caller, principalOf(c).TokenID, tools))(c)
}

// challengeBearer adds the WWW-Authenticate challenge (RFC 6750) MCP
// clients read to a 401 from auth.
func (s *server) challengeBearer(auth fiber.Handler) fiber.Handler {
	return func(c *fiber.Ctx) error {
		err := auth(c)
		var e *apperr.Error
		if errors.As(err, &e) && e.Code == apperr.Unauthenticated {
			c.Set(fiber.HeaderWWWAuthenticate, `Bearer realm="appruntime", error="invalid_token"`)
		}
		return err
	}
}
