package console

import (
	"slices"

	"github.com/gofiber/fiber/v2"

	"github.com/appruntime/appruntime/internal/queue"
)

// queuesPage is the Queues page: every queue, the live servers, and the
// tasks of one queue in one state when the query names them.
type queuesPage struct {
	Queues  []queue.Info
	Servers []queue.Server
	States  []string
	// Queue and State are the listing asked for (?queue=&state=); Tasks its tasks.
	Queue, State string
	Tasks        []queue.Task
	// Operator says whether the admin may pause queues and act on tasks
	// (the buttons are shown only then).
	Operator bool
}

// listQueues answers GET /queues[?queue=Q&state=S].
func (s *server) listQueues(c *fiber.Ctx) error {
	ctx := c.UserContext()
	qs, err := s.JobQueues.Queues(ctx)
	if err != nil {
		return err
	}
	servers, err := s.JobQueues.Servers(ctx)
	if err != nil {
		return err
	}
	p := queuesPage{Queues: qs, Servers: servers, States: queue.States, Queue: c.Query("queue"), State: c.Query("state", queue.StatePending),
		Operator: s.isOperator(adminOf(c))}
	if p.Queue != "" {
		if !slices.Contains(queue.States, p.State) {
			p.State = queue.StatePending
		}
		if p.Tasks, err = s.JobQueues.Tasks(ctx, p.Queue, p.State); err != nil {
			return err
		}
	}
	return s.render(c, fiber.StatusOK, "queues", "Queues", "queues", p)
}
