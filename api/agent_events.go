package api

import (
	"strconv"

	"github.com/gofiber/fiber/v2"

	"github.com/appruntime/appruntime/internal/apperr"
	"github.com/appruntime/appruntime/models"
)

// mountAgentEvents adds the agent platforms' pull endpoint for task events.
func (s *server) mountAgentEvents(app *fiber.App) {
	app.Get("/api/agent/tasks/:id/events", s.requireToken(models.ScopeAgent), s.listAgentTaskEvents)
}

// listAgentTaskEvents answers GET /api/agent/tasks/:id/events?after=<feed id>:
// the task's feed events after the cursor, oldest first. Platforms without a
// resume webhook poll it to learn that a parked task resumed.
func (s *server) listAgentTaskEvents(c *fiber.Ctx) error {
	after, err := afterCursor(c)
	if err != nil {
		return err
	}
	page, err := s.Tasks.Events(c.UserContext(), agentCaller(c), c.Params("id"), after)
	if err != nil {
		return err
	}
	return c.JSON(page)
}

// afterCursor reads a feed page's ?after= cursor (a feed event id; absent
// is 0, the start).
func afterCursor(c *fiber.Ctx) (int64, error) {
	raw := c.Query("after")
	if raw == "" {
		return 0, nil
	}
	n, err := strconv.ParseInt(raw, 10, 64)
	if err != nil || n < 0 {
		return 0, apperr.Invalidf("after must be a non-negative integer, got %q", raw)
	}
	return n, nil
}
