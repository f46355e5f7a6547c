package console

import (
	"github.com/gofiber/fiber/v2"

	"github.com/appruntime/appruntime/internal/queue"
)

// queueTaskPage is a queue task's page.
type queueTaskPage struct {
	queue.Detail
	// MaxPayload is the size a payload is cut at (queue.MaxPayloadDetail).
	MaxPayload int
	Operator   bool
	// MayRead says the admin may read the payload and result
	// (queue.Task.MayRead).
	MayRead bool
	// MayReadError says the admin may read the last error
	// (queue.Task.MayReadError).
	MayReadError bool
}

// showQueueTask answers GET /queues/:queue/tasks/:task: what asynq keeps
// about the task (payload, attempts, last error, its times); 404 for a task
// the queue does not have.
func (s *server) showQueueTask(c *fiber.Ctx) error {
	d, err := s.JobQueues.TaskDetail(c.UserContext(), c.Params("queue"), c.Params("task"))
	if err != nil {
		return err
	}
	a := adminOf(c)
	p := queueTaskPage{Detail: d, MaxPayload: queue.MaxPayloadDetail, Operator: s.isOperator(a)}
	p.MayRead = d.MayRead(a.WorkspaceID, p.Operator)
	p.MayReadError = d.MayReadError(a.WorkspaceID, p.Operator)
	return s.render(c, fiber.StatusOK, "queue_task", "Queue task "+d.ID, "queues", p)
}
