package console

import (
	"github.com/gofiber/fiber/v2"
)

// showTaskAsset answers GET /tasks/:id/assets/:asset: the HTML of an app
// block of one of the task's replies, for the task page's sandboxed frame
// (sendAsset).
func (s *server) showTaskAsset(c *fiber.Ctx) error {
	a := adminOf(c)
	data, err := s.Replies.TaskAsset(c.UserContext(), a.WorkspaceID, c.Params("id"), c.Params("asset"))
	if err != nil {
		return err
	}
	return s.sendAsset(c, data)
}
