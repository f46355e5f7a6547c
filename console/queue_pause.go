package console

import (
	"net/url"

	"github.com/gofiber/fiber/v2"
)

// pauseQueue answers POST /queues/:queue/pause: its tasks stay pending until
// it is resumed (audited).
func (s *server) pauseQueue(c *fiber.Ctx) error {
	a := adminOf(c)
	q := c.Params("queue")
	if err := s.JobQueues.Pause(c.UserContext(), a.WorkspaceID, a.actor(), q); err != nil {
		return err
	}
	return redirectTo(c, "/queues?queue="+url.QueryEscape(q), "queue_paused")
}

// resumeQueue answers POST /queues/:queue/resume (audited).
func (s *server) resumeQueue(c *fiber.Ctx) error {
	a := adminOf(c)
	q := c.Params("queue")
	if err := s.JobQueues.Resume(c.UserContext(), a.WorkspaceID, a.actor(), q); err != nil {
		return err
	}
	return redirectTo(c, "/queues?queue="+url.QueryEscape(q), "queue_resumed")
}
