package console

import (
	"strings"
	"unicode/utf8"

	"github.com/gofiber/fiber/v2"

	"github.com/appruntime/appruntime/internal/apperr"
)

// MaxMessageLength bounds a message a person sends the agent from a task page.
const MaxMessageLength = 10000

// sendTaskMessage answers POST /tasks/:id/messages (form field "message"):
// what the person wrote in the composer, perhaps filled by an app's
// ui/message, becomes a user_message event of the task's feed, which the
// agent reads like any other event.
func (s *server) sendTaskMessage(c *fiber.Ctx) error {
	a := adminOf(c)
	text := c.FormValue("message")
	switch {
	case strings.TrimSpace(text) == "":
		return apperr.Invalidf("the message is empty")
	case !utf8.ValidString(text) || utf8.RuneCountInString(text) > MaxMessageLength:
		return apperr.Invalidf("a message is at most %d characters", MaxMessageLength)
	}
	if err := s.Tasks.AddUserMessage(c.UserContext(), a.WorkspaceID, c.Params("id"), a.actor(), text); err != nil {
		return err
	}
	return redirectTo(c, "/tasks/"+c.Params("id"), "message_sent")
}
