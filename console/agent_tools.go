package console

import (
	"fmt"

	"github.com/gofiber/fiber/v2"

	"github.com/appruntime/appruntime/internal/admin"
	"github.com/appruntime/appruntime/internal/agentcall"
	"github.com/appruntime/appruntime/internal/apperr"
)

// agentToolsPage is an agent's tools with an editor for each.
type agentToolsPage struct {
	Agent admin.AgentView
	Tools []agentToolEdit
	// New is the editor of a new tool: a template, or what was refused.
	New string
	// Error is why the last save was refused, and Failed which editor it was
	// ("new" or a tool's id).
	Error  string
	Failed string
}

// agentToolEdit is one tool and its JSON in the editor.
type agentToolEdit struct {
	agentcall.DeclarationView
	JSON string
}

// newToolAppExample is the new tool editor's starting text when the
// workspace has a component integration: an app target on the first one
// (%s is its id), which saves as it is.
const newToolAppExample = `{
  "name": "save_bookmark",
  "displayName": "Save bookmark",
  "description": "Save a bookmark URL and return a confirmation.",
  "input": {"type": "object", "properties": {"url": {"type": "string"}}, "required": ["url"], "additionalProperties": false},
  "target": {"type": "app", "component": "%s", "path": "/tools/save-bookmark", "method": "POST", "body": "${input}"}
}`

// newToolURLExample is the starting text when the workspace has no
// component integration (the dev demo has none): a url target, which saves
// as it is, so the example is never a dead end.
const newToolURLExample = `{
  "name": "save_bookmark",
  "displayName": "Save bookmark",
  "description": "Save a bookmark URL and return a confirmation.",
  "input": {"type": "object", "properties": {"url": {"type": "string"}}, "required": ["url"], "additionalProperties": false},
  "target": {"type": "url", "url": "https://bookmarks.example.com/save", "method": "POST", "body": "${input}"}
}`

// newToolExample returns the new tool editor's starting text for the
// signed-in admin's workspace: one that saves unchanged.
func (s *server) newToolExample(c *fiber.Ctx) (string, error) {
	list, err := s.Admin.ListIntegrations(c.UserContext(), adminOf(c).WorkspaceID)
	if err != nil {
		return "", err
	}
	for _, i := range list {
		if i.Kind == admin.KindComponent {
			return fmt.Sprintf(newToolAppExample, i.ID), nil
		}
	}
	return newToolURLExample, nil
}

// listAgentTools answers GET /agents/:id/tools.
func (s *server) listAgentTools(c *fiber.Ctx) error {
	example, err := s.newToolExample(c)
	if err != nil {
		return err
	}
	return s.renderAgentTools(c, fiber.StatusOK, example, "", "", "")
}

// renderAgentTools renders the page; failed names the editor whose save
// was refused with msg, keeping body in it.
func (s *server) renderAgentTools(c *fiber.Ctx, status int, newText, failed, body, msg string) error {
	ctx, a := c.UserContext(), adminOf(c)
	agent, err := s.Admin.GetAgent(ctx, a.WorkspaceID, c.Params("id"))
	if err != nil {
		return err
	}
	list, err := s.AgentCalls.ListDeclarations(ctx, a.WorkspaceID, agent.ID)
	if err != nil {
		return err
	}
	pg := agentToolsPage{Agent: agent, New: newText, Error: msg, Failed: failed}
	for _, d := range list {
		e := agentToolEdit{DeclarationView: d, JSON: agentcall.Wire(d)}
		if failed == d.ID {
			e.JSON = body
		}
		pg.Tools = append(pg.Tools, e)
	}
	return s.render(c, status, "agent_tools", "Tools of "+agent.Name, "agents", pg)
}

// createAgentTool answers POST /agents/:id/tools (form field "declaration").
func (s *server) createAgentTool(c *fiber.Ctx) error {
	a := adminOf(c)
	body := c.FormValue("declaration")
	_, err := s.AgentCalls.CreateDeclaration(c.UserContext(), a.WorkspaceID, c.Params("id"), a.actor(), []byte(body))
	if refused, msg := refusal(err); refused {
		return s.renderAgentTools(c, fiber.StatusBadRequest, body, "new", "", msg)
	}
	if err != nil {
		return err
	}
	return redirectTo(c, "/agents/"+c.Params("id")+"/tools", "tool_saved")
}

// saveAgentTool answers POST /agents/:id/tools/:tool: the whole JSON replaces the tool.
func (s *server) saveAgentTool(c *fiber.Ctx) error {
	a := adminOf(c)
	body := c.FormValue("declaration")
	_, err := s.AgentCalls.ReplaceDeclaration(c.UserContext(), a.WorkspaceID, c.Params("id"), a.actor(), c.Params("tool"), []byte(body))
	if refused, msg := refusal(err); refused {
		example, err := s.newToolExample(c)
		if err != nil {
			return err
		}
		return s.renderAgentTools(c, fiber.StatusBadRequest, example, c.Params("tool"), body, msg)
	}
	if err != nil {
		return err
	}
	return redirectTo(c, "/agents/"+c.Params("id")+"/tools", "tool_saved")
}

// deleteAgentTool answers POST /agents/:id/tools/:tool/delete.
func (s *server) deleteAgentTool(c *fiber.Ctx) error {
	a := adminOf(c)
	if err := s.AgentCalls.DeleteDeclaration(c.UserContext(), a.WorkspaceID, c.Params("id"), a.actor(), c.Params("tool")); err != nil {
		return err
	}
	return redirectTo(c, "/agents/"+c.Params("id")+"/tools", "tool_deleted")
}

// refusal reports whether err is a refusal the editor shows next to the
// text (invalid or conflict), with its message.
func refusal(err error) (bool, string) {
	if err == nil {
		return false, ""
	}
	code, _, msg := apperr.Public(err)
	return code == apperr.Invalid || code == apperr.Conflict, msg
}
