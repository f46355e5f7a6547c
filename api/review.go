package api

import (
	"github.com/gofiber/fiber/v2"

	"github.com/appruntime/appruntime/internal/apperr"
	"github.com/appruntime/appruntime/models"
)

// reviewRoutes mounts the host's review queue and task feed. A host token
// acts for its user, the reviewer.
func (s *server) reviewRoutes(app *fiber.App) {
	host := s.requireToken(models.ScopeHost)
	app.Post("/api/review/next", host, s.reviewNext)
	app.Post("/api/review/tasks/:id/abort", host, s.reviewAbort)
	app.Get("/api/tasks/:id/feed", host, s.taskFeed)
}

// reviewNextReply is POST /api/review/next's reply: the claimed task, or
// null when nothing waits for review.
type reviewNextReply struct {
	Task    any    `json:"task"`
	Message string `json:"message,omitempty"`
}

// reviewNext answers POST /api/review/next: it claims the next parked task
// for the token's user (claim.Queue.Next).
func (s *server) reviewNext(c *fiber.Ctx) error {
	if len(c.Body()) > 0 && string(c.Body()) != "{}" {
		return apperr.Invalidf("POST /api/review/next takes no body (or {})")
	}
	p := principalOf(c)
	claim, err := s.Queue.Next(c.UserContext(), p.WorkspaceID, p.UserID)
	if err != nil {
		return err
	}
	if claim == nil {
		return c.JSON(reviewNextReply{Task: nil, Message: "nothing to review"})
	}
	return c.JSON(reviewNextReply{Task: claim})
}

// reviewAbort answers POST /api/review/tasks/{id}/abort: the claim holder
// puts the task back in the queue.
func (s *server) reviewAbort(c *fiber.Ctx) error {
	p := principalOf(c)
	id := c.Params("id")
	if err := s.Queue.Abort(c.UserContext(), p.WorkspaceID, p.UserID, id); err != nil {
		return err
	}
	return c.JSON(fiber.Map{"task_id": id, "released": true})
}

// taskFeed answers GET /api/tasks/{id}/feed?after=: the task's feed with
// each artifact's live descriptor merged (artifact.Minter.Feed).
func (s *server) taskFeed(c *fiber.Ctx) error {
	after, err := afterCursor(c)
	if err != nil {
		return err
	}
	page, err := s.Artifacts.Feed(c.UserContext(), principalOf(c).WorkspaceID, c.Params("id"), after)
	if err != nil {
		return err
	}
	return c.JSON(page)
}
