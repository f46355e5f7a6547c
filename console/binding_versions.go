package console

import (
	"github.com/gofiber/fiber/v2"

	"github.com/appruntime/appruntime/internal/binding"
)

// bindingVersionsPage is a binding's history.
type bindingVersionsPage struct {
	Binding  binding.Binding
	Versions []binding.Version
	// Actors maps "user:<id>" to the user's email, for "saved by".
	Actors map[string]string
}

// listBindingVersions answers GET /bindings/:id/versions: every save, newest
// first, with who saved it, when, and what changed; each older version can
// be restored.
func (s *server) listBindingVersions(c *fiber.Ctx) error {
	ctx, a := c.UserContext(), adminOf(c)
	b, err := s.Bindings.Get(ctx, a.WorkspaceID, c.Params("id"))
	if err != nil {
		return err
	}
	versions, err := s.Bindings.Versions(ctx, a.WorkspaceID, b.ID)
	if err != nil {
		return err
	}
	actors, err := s.actorNames(c)
	if err != nil {
		return err
	}
	return s.render(c, fiber.StatusOK, "binding_versions", "History of "+b.Name, "bindings",
		bindingVersionsPage{Binding: b, Versions: versions, Actors: actors})
}

// actorNames maps the workspace's actors ("user:<id>", "agent:<id>",
// "token:<id>") to how a person reads them (an email, an agent's or a
// token's name), so that history, feed and audit pages name who did what.
func (s *server) actorNames(c *fiber.Ctx) (map[string]string, error) {
	return s.Admin.ActorNames(c.UserContext(), adminOf(c).WorkspaceID)
}
