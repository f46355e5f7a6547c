package console

import (
	"github.com/gofiber/fiber/v2"

	"github.com/appruntime/appruntime/internal/appblock"
)

// showTaskAsset answers GET /tasks/:id/assets/:asset: the HTML of an app
// block of one of the task's replies, for the task page's sandboxed frame.
// It is served under the asset's own policy (appblock.AssetHeaders: no
// network, inline scripts and styles, sandboxed to an opaque origin even
// when opened directly), framable by this console only.
func (s *server) showTaskAsset(c *fiber.Ctx) error {
	a := adminOf(c)
	data, err := s.Replies.TaskAsset(c.UserContext(), a.WorkspaceID, c.Params("id"), c.Params("asset"))
	if err != nil {
		return err
	}
	c.Response().Header.Del(fiber.HeaderXFrameOptions)
	for _, h := range appblock.AssetHeaders(originOf(s.ConsoleURL)) {
		c.Set(h[0], h[1])
	}
	return c.Send(data)
}
