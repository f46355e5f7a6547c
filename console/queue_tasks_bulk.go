package console

import (
	"github.com/gofiber/fiber/v2"

	"github.com/appruntime/appruntime/internal/apperr"
)

// queueBulkPage reports a bulk action: what was done to each task selected.
type queueBulkPage struct {
	Queue, State, Action string
	Outcomes             []bulkOutcome
	Done, Failed         int
}

// bulkHeadings and bulkDone name each bulk action on its report.
var (
	bulkHeadings = map[string]string{"run": "Run now", "archive": "Archive", "delete": "Delete"}
	bulkDone     = map[string]string{"run": "pending again", "archive": "archived", "delete": "deleted"}
)

// Heading names the action taken.
func (p queueBulkPage) Heading() string { return bulkHeadings[p.Action] }

// DoneText says what became of a task the action was done to.
func (p queueBulkPage) DoneText() string { return bulkDone[p.Action] }

// bulkOutcome is one task's line of the report; Error is the refusal's
// message, as the single action's error page would show it.
type bulkOutcome struct {
	ID, Error string
}

// actOnQueueTasks answers POST /queues/:queue/tasks (action=run|archive|
// delete, id=… repeated, state=the listing's): it acts on each task
// selected, audited one by one as the single actions are, and reports each;
// a task it cannot act on (unknown, or in a state the action does not take)
// is reported and the others are still acted on.
func (s *server) actOnQueueTasks(c *fiber.Ctx) error {
	a := adminOf(c)
	q, action := c.Params("queue"), c.FormValue("action")
	var ids []string
	for _, v := range c.Request().PostArgs().PeekMulti("id") {
		ids = append(ids, string(v))
	}
	outcomes, err := s.JobQueues.Batch(c.UserContext(), a.WorkspaceID, a.actor(), q, action, ids)
	if err != nil {
		return err
	}
	p := queueBulkPage{Queue: q, State: c.FormValue("state"), Action: action}
	status := fiber.StatusOK
	for _, o := range outcomes {
		line := bulkOutcome{ID: o.ID}
		if o.Err != nil {
			code, st, msg := apperr.Public(o.Err)
			if code == apperr.Internal {
				s.Log.Error("console: bulk queue action", "queue", q, "action", action, "task", o.ID, "err", o.Err)
			}
			if p.Failed == 0 {
				status = st
			}
			p.Failed++
			line.Error = msg
		} else {
			p.Done++
		}
		p.Outcomes = append(p.Outcomes, line)
	}
	if p.Done > 0 {
		// Something was done: the report is the answer, refusals included.
		status = fiber.StatusOK
	}
	return s.render(c, status, "queue_bulk", "Bulk "+action, "queues", p)
}
