package api

import (
	"github.com/gofiber/fiber/v2"

	"github.com/appruntime/appruntime/internal/agentcall"
	"github.com/appruntime/appruntime/models"
)

// agentToolCallRoutes mounts the tool calls of agents (agent token) and the
// buttons of their pending-input cards (host token).
func (s *server) agentToolCallRoutes(app *fiber.App) {
	app.Post("/api/agent/tasks/:id/tool-calls", s.requireToken(models.ScopeAgent), s.callAgentTool)
	app.Get("/api/tasks/:id/tool-calls", s.requireToken(models.ScopeHost), s.listTaskToolCalls)
	app.Post("/api/tasks/:id/tool-calls/:call/buttons/:button", s.requireToken(models.ScopeHost), s.clickToolCallButton)
}

// listTaskToolCalls answers GET /api/tasks/:id/tool-calls (host token):
// the task's tool calls with their results (markdown rendered safely in
// result.html) and their pending-input cards, which the host shows and
// answers through the buttons route.
func (s *server) listTaskToolCalls(c *fiber.Ctx) error {
	list, err := s.AgentCalls.TaskCalls(c.UserContext(), principalOf(c).WorkspaceID, c.Params("id"))
	if err != nil {
		return err
	}
	return c.JSON(fiber.Map{"tool_calls": list})
}

// callAgentTool answers POST /api/agent/tasks/:id/tool-calls {"name",
// "input"} with the call once it has its result (201): completed with its
// result, or pending_input with the card that parked the task.
func (s *server) callAgentTool(c *fiber.Ctx) error {
	var in agentcall.CallInput
	if err := decodeStrictBody(c, &in); err != nil {
		return err
	}
	v, err := s.AgentCalls.Call(c.UserContext(), agentCaller(c), c.Params("id"), in)
	if err != nil {
		return err
	}
	return c.Status(fiber.StatusCreated).JSON(v)
}

// clickToolCallButton answers POST
// /api/tasks/:id/tool-calls/:call/buttons/:button (no body) with the
// answered call; a card answered already, or being answered, is 409.
func (s *server) clickToolCallButton(c *fiber.Ctx) error {
	p := principalOf(c)
	v, err := s.AgentCalls.Click(c.UserContext(), agentcall.Clicker{WorkspaceID: p.WorkspaceID, UserID: p.UserID, Actor: p.Actor()},
		c.Params("id"), c.Params("call"), c.Params("button"))
	if err != nil {
		return err
	}
	return c.JSON(v)
}
