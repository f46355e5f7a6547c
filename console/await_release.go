package console

import (
	"github.com/gofiber/fiber/v2"
)

// releaseAwait answers POST /tasks/:id/awaits/:await/release: an admin
// releases a parked task's pending await, which resumes the agent exactly as
// an action with resolves_await would (docs/architecture.md#3-parked-tasks-are-seen), for the
// reason the form's note gives (required).
func (s *server) releaseAwait(c *fiber.Ctx) error {
	a := adminOf(c)
	aw, err := s.Parked.Release(c.UserContext(), a.WorkspaceID, c.Params("await"), a.actor(), c.FormValue("note"))
	if err != nil {
		return err
	}
	return redirectTo(c, "/tasks/"+aw.TaskID, "released")
}
