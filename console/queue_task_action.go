package console

import (
	"net/url"

	"github.com/gofiber/fiber/v2"

	"github.com/appruntime/appruntime/internal/apperr"
)

// actOnQueueTask answers POST /queues/:queue/tasks/:task/{run,archive,delete,cancel}
// (audited) and returns to the listing the form came from (its state field).
func (s *server) actOnQueueTask(c *fiber.Ctx) error {
	a := adminOf(c)
	ctx, q, id := c.UserContext(), c.Params("queue"), c.Params("task")
	var err error
	var notice string
	switch c.Params("action") {
	case "run":
		err, notice = s.JobQueues.RunTask(ctx, a.WorkspaceID, a.actor(), q, id), "task_run"
	case "archive":
		err, notice = s.JobQueues.ArchiveTask(ctx, a.WorkspaceID, a.actor(), q, id), "task_archived"
	case "delete":
		err, notice = s.JobQueues.DeleteTask(ctx, a.WorkspaceID, a.actor(), q, id), "task_deleted"
	case "cancel":
		err, notice = s.JobQueues.CancelTask(ctx, a.WorkspaceID, a.actor(), q, id), "task_canceled"
	default:
		return apperr.NotFoundf("no task action %q", c.Params("action"))
	}
	if err != nil {
		return err
	}
	return redirectTo(c, "/queues?queue="+url.QueryEscape(q)+"&state="+url.QueryEscape(c.FormValue("state")), notice)
}
