package console

import (
	"strconv"

	"github.com/gofiber/fiber/v2"

	"github.com/appruntime/appruntime/internal/apperr"
)

// restoreBindingVersion answers POST /bindings/:id/versions/:version/restore:
// the old version's content is validated again and saved as a new version.
func (s *server) restoreBindingVersion(c *fiber.Ctx) error {
	a := adminOf(c)
	v, err := strconv.Atoi(c.Params("version"))
	if err != nil || v < 1 {
		return apperr.NotFoundf("version %q not found", c.Params("version"))
	}
	b, err := s.Bindings.Restore(c.UserContext(), a.WorkspaceID, c.Params("id"), v, a.actor())
	if err != nil {
		return err
	}
	return redirectTo(c, "/bindings/"+b.ID+"/versions", "restored")
}
