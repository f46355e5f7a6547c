package console

import (
	"github.com/gofiber/fiber/v2"
)

// sendTaskMessage answers POST /tasks/:id/messages (form field "message"):
// what the person wrote in the composer, perhaps filled by an app's
// ui/message, becomes a user_message event of the task's feed, which the
// agent reads like any other event.
func (s *server) sendTaskMessage(c *fiber.Ctx) error {
	a := adminOf(c)
	text, err := messageText(c)
	if err != nil {
		return err
	}
	if err := s.Tasks.AddUserMessage(c.UserContext(), a.WorkspaceID, c.Params("id"), a.actor(), text); err != nil {
		return err
	}
	return redirectTo(c, "/tasks/"+c.Params("id"), "message_sent")
}
