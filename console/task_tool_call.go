package console

import (
	"github.com/gofiber/fiber/v2"

	"github.com/appruntime/appruntime/internal/agentcall"
	"github.com/appruntime/appruntime/internal/apperr"
)

// clickToolCallButton answers POST /tasks/:id/tool-calls/:call/buttons/:button:
// the admin presses a button of a pending-input card, as a host's person
// would through the API. A target that fails leaves the task parked with
// the error on the card; the page says so.
func (s *server) clickToolCallButton(c *fiber.Ctx) error {
	a := adminOf(c)
	taskID := c.Params("id")
	_, err := s.AgentCalls.Click(c.UserContext(), agentcall.Clicker{WorkspaceID: a.WorkspaceID, UserID: a.ID, Actor: a.actor()},
		taskID, c.Params("call"), c.Params("button"))
	if err != nil {
		switch apperr.CodeOf(err) {
		case apperr.BadGateway, apperr.Forbidden, apperr.Timeout, apperr.Invalid, apperr.NotImplemented:
			return redirectTo(c, "/tasks/"+taskID, "button_failed")
		}
		return err
	}
	return redirectTo(c, "/tasks/"+taskID, "answered")
}
