package console

import (
	"github.com/gofiber/fiber/v2"

	"github.com/appruntime/appruntime/internal/toolconfig"
)

// toolsPage is the configured tools list's data.
type toolsPage struct {
	Tools  []toolconfig.View
	Agents map[string]string // id → name
}

// listTools answers GET /tools: the workspace's configured tools.
func (s *server) listTools(c *fiber.Ctx) error {
	ctx, a := c.UserContext(), adminOf(c)
	tools, err := s.Tools.List(ctx, a.WorkspaceID, "")
	if err != nil {
		return err
	}
	agents, err := s.agentNames(c)
	if err != nil {
		return err
	}
	return s.render(c, fiber.StatusOK, "tools", "Configured tools", "tools", toolsPage{Tools: tools, Agents: agents})
}

// agentNames maps the workspace's agent ids to their names.
func (s *server) agentNames(c *fiber.Ctx) (map[string]string, error) {
	list, err := s.Admin.ListAgents(c.UserContext(), adminOf(c).WorkspaceID)
	if err != nil {
		return nil, err
	}
	names := make(map[string]string, len(list))
	for _, a := range list {
		names[a.ID] = a.Name
	}
	return names, nil
}
