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
	// Query, AgentID and PoolID are the search asked for
	// (?q=&agent=&pool=); Agents and Pools the workspace's, by name, for
	// the selects.
	Query, AgentID, PoolID string
	Agents                 []admin.AgentView
	Pools                  []admin.ReviewPoolView
}

// Link returns /tasks with the page's filters and page n, so a search can
// be shared and paged.
func (p tasksPage) Link(n int) string {
	return searchLink("/tasks", n, "status", p.Status, "q", p.Query, "agent", p.AgentID, "pool", p.PoolID)
}

// Older returns the link of the next (older) page: keyset, after this
// page's last task.
func (p tasksPage) Older() string {
	return searchLink("/tasks", p.Page+1, "status", p.Status, "q", p.Query, "agent", p.AgentID, "pool", p.PoolID, "before", p.Next)
}

// listTasks answers GET /tasks[?status=…&q=…&agent=…&pool=…&page=…]: the
// workspace's tasks, newest first, found by text (title, id, key details,
// agent name), agent and review pool, with how long each parked one has
// been waiting.
func (s *server) listTasks(c *fiber.Ctx) error {
	ctx, ws := c.UserContext(), adminOf(c).WorkspaceID
	p := tasksPage{Status: c.Query("status"), Statuses: task.Statuses, Query: c.Query("q"), AgentID: c.Query("agent"), PoolID: c.Query("pool")}
	var err error
	p.SummaryPage, err = s.Tasks.ListWorkspace(ctx, ws, task.ListFilter{Status: p.Status, Query: p.Query, AgentID: p.AgentID, PoolID: p.PoolID, Page: pageParam(c),
		Before: c.Query("before")})
	if err != nil {
		return err
	}
	if p.Agents, err = s.Admin.ListAgents(ctx, ws); err != nil {
		return err
	}
	if p.Pools, err = s.Admin.ListReviewPools(ctx, ws); err != nil {
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
