package console

import (
	"strconv"

	"github.com/gofiber/fiber/v2"

	"github.com/appruntime/appruntime/internal/task"
)

// tasksPage is a page of the workspace's tasks.
type tasksPage struct {
	task.SummaryPage
	Status   string
	Statuses []string
}

// listTasks answers GET /tasks[?status=…&page=…]: the workspace's tasks,
// newest first, with how long each parked one has been waiting.
func (s *server) listTasks(c *fiber.Ctx) error {
	status := c.Query("status")
	page, err := s.Tasks.ListWorkspace(c.UserContext(), adminOf(c).WorkspaceID, task.ListFilter{Status: status, Page: pageParam(c)})
	if err != nil {
		return err
	}
	return s.render(c, fiber.StatusOK, "tasks", "Tasks", "tasks", tasksPage{SummaryPage: page, Status: status, Statuses: task.Statuses})
}

// pageParam reads ?page= (1-based); anything else is the first page.
func pageParam(c *fiber.Ctx) int {
	n, err := strconv.Atoi(c.Query("page"))
	if err != nil || n < 1 {
		return 1
	}
	return n
}
