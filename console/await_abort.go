package console

import (
	"github.com/gofiber/fiber/v2"
)

// abortAwait answers POST /tasks/:id/awaits/:await/abort: an admin gives up
// on a parked task; its await is aborted and the task fails, without
// resuming the agent, for the reason the form's note gives (required).
func (s *server) abortAwait(c *fiber.Ctx) error {
	a := adminOf(c)
	aw, err := s.Parked.Abort(c.UserContext(), a.WorkspaceID, c.Params("await"), a.actor(), c.FormValue("note"))
	if err != nil {
		return err
	}
	return redirectTo(c, "/tasks/"+aw.TaskID, "aborted")
}
