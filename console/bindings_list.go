package console

import (
	"github.com/gofiber/fiber/v2"

	"github.com/appruntime/appruntime/internal/binding"
)

// bindingsPage is the bindings list's data.
type bindingsPage struct {
	Bindings     []binding.Binding
	Integrations map[string]string // id → name
}

// listBindings answers GET /bindings: the workspace's bindings by name.
func (s *server) listBindings(c *fiber.Ctx) error {
	ctx, a := c.UserContext(), adminOf(c)
	list, err := s.Bindings.List(ctx, a.WorkspaceID)
	if err != nil {
		return err
	}
	names, err := s.integrationNames(c)
	if err != nil {
		return err
	}
	return s.render(c, fiber.StatusOK, "bindings", "Bindings", "bindings", bindingsPage{Bindings: list, Integrations: names})
}

// integrationNames maps the workspace's integration ids to their names.
func (s *server) integrationNames(c *fiber.Ctx) (map[string]string, error) {
	list, err := s.Admin.ListIntegrations(c.UserContext(), adminOf(c).WorkspaceID)
	if err != nil {
		return nil, err
	}
	names := make(map[string]string, len(list))
	for _, i := range list {
		names[i.ID] = i.Name
	}
	return names, nil
}
