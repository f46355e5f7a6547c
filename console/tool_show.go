package console

import (
	"github.com/gofiber/fiber/v2"

	"github.com/appruntime/appruntime/internal/admin"
	"github.com/appruntime/appruntime/internal/toolconfig"
)

// toolPage is a configured tool's page.
type toolPage struct {
	Tool      toolconfig.View
	AgentName string
	// Names names the tool's bundle, binding, producer tool and
	// integration by "<kind>:<id>".
	Names map[string]string
}

// showTool answers GET /tools/:id: a configured tool's bound settings.
func (s *server) showTool(c *fiber.Ctx) error {
	t, err := s.Tools.Get(c.UserContext(), adminOf(c).WorkspaceID, c.Params("id"))
	if err != nil {
		return err
	}
	agents, err := s.agentNames(c)
	if err != nil {
		return err
	}
	var refs []admin.Object
	for kind, id := range map[string]*string{"bundle": t.BundleID, "binding": t.BindingID, "configured_tool": t.ProducerToolID, "integration": t.IntegrationID} {
		if id != nil {
			refs = append(refs, admin.Object{Kind: kind, ID: *id})
		}
	}
	names, err := s.objectNames(c, refs)
	if err != nil {
		return err
	}
	return s.render(c, fiber.StatusOK, "tool", "Tool "+t.DisplayName, "tools", toolPage{Tool: t, AgentName: agents[t.AgentID], Names: names})
}
