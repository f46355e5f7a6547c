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
}

// showQueueTask answers GET /queues/:queue/tasks/:task: what asynq keeps
// about the task (payload, attempts, last error, its times); 404 for a task
// the queue does not have.
func (s *server) showQueueTask(c *fiber.Ctx) error {
	d, err := s.JobQueues.TaskDetail(c.UserContext(), c.Params("queue"), c.Params("task"))
	if err != nil {
		return err
	}
	p := queueTaskPage{Detail: d, MaxPayload: queue.MaxPayloadDetail, Operator: s.isOperator(adminOf(c))}
	return s.render(c, fiber.StatusOK, "queue_task", "Queue task "+d.ID, "queues", p)
}
