package console

import (
	"strconv"

	"github.com/gofiber/fiber/v2"

	"github.com/appruntime/appruntime/internal/admin"
	"github.com/appruntime/appruntime/internal/task"
)

// tasksPage is a page of the workspace's tasks.
type tasksPage struct {
	task.SummaryPage
	Status   string
	Statuses []string
	// Query and AgentID are the search asked for (?q=&agent=); Agents the
	// workspace's agents, by name, for the agent select.
	Query, AgentID string
	Agents         []admin.AgentView
}

// Link returns /tasks with the page's filters and page n, so a search can
// be shared and paged.
func (p tasksPage) Link(n int) string {
	return searchLink("/tasks", n, "status", p.Status, "q", p.Query, "agent", p.AgentID)
}

// listTasks answers GET /tasks[?status=…&q=…&agent=…&page=…]: the
// workspace's tasks, newest first, found by text (title, id, key details,
// agent name) and agent, with how long each parked one has been waiting.
func (s *server) listTasks(c *fiber.Ctx) error {
	ctx, ws := c.UserContext(), adminOf(c).WorkspaceID
	p := tasksPage{Status: c.Query("status"), Statuses: task.Statuses, Query: c.Query("q"), AgentID: c.Query("agent")}
	var err error
	p.SummaryPage, err = s.Tasks.ListWorkspace(ctx, ws, task.ListFilter{Status: p.Status, Query: p.Query, AgentID: p.AgentID, Page: pageParam(c)})
	if err != nil {
		return err
	}
	if p.Agents, err = s.Admin.ListAgents(ctx, ws); err != nil {
		return err
	}
	return s.render(c, fiber.StatusOK, "tasks", "Tasks", "tasks", p)
}

// pageParam reads ?page= (1-based); anything else is the first page.
func pageParam(c *fiber.Ctx) int {
	n, err := strconv.Atoi(c.Query("page"))
	if err != nil || n < 1 {
		return 1
	}
	return n
}
