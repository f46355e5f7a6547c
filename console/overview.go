package console

import (
	"github.com/gofiber/fiber/v2"

	"github.com/appruntime/appruntime/internal/admin"
	"github.com/appruntime/appruntime/internal/review"
	"github.com/appruntime/appruntime/internal/task"
)

// parkedShownOnOverview is how many parked tasks the overview lists.
const parkedShownOnOverview = 10

// overviewPage is the overview's data.
type overviewPage struct {
	Workspace    admin.WorkspaceView
	Counts       []count
	TaskCounts   map[string]int64
	TaskStatuses []string
	Parked       []task.Summary
	// ParkedByAgent counts the parked tasks per agent, with the oldest's
	// age; the first is the oldest overall.
	ParkedByAgent []review.ParkedByAgent
}

// count is one figure of the overview, linking to its page.
type count struct {
	Label string
	N     int
	Link  string
}

// showOverview answers GET /: the workspace, what it holds, and the parked
// tasks that need attention, longest-parked first.
func (s *server) showOverview(c *fiber.Ctx) error {
	ctx, a := c.UserContext(), adminOf(c)
	ws, err := s.Admin.GetWorkspace(ctx, a.WorkspaceID, a.WorkspaceID)
	if err != nil {
		return err
	}
	bindings, err := s.Bindings.List(ctx, a.WorkspaceID)
	if err != nil {
		return err
	}
	tools, err := s.Tools.List(ctx, a.WorkspaceID, "")
	if err != nil {
		return err
	}
	bundles, err := s.Bundles.List(ctx, a.WorkspaceID)
	if err != nil {
		return err
	}
	integrations, err := s.Admin.ListIntegrations(ctx, a.WorkspaceID)
	if err != nil {
		return err
	}
	agents, err := s.Admin.ListAgents(ctx, a.WorkspaceID)
	if err != nil {
		return err
	}
	users, err := s.Admin.ListUsers(ctx, a.WorkspaceID)
	if err != nil {
		return err
	}
	sessions, err := s.Artifacts.LiveSessions(ctx, a.WorkspaceID)
	if err != nil {
		return err
	}
	taskCounts, err := s.Tasks.CountByStatus(ctx, a.WorkspaceID)
	if err != nil {
		return err
	}
	parked, err := s.Tasks.Parked(ctx, a.WorkspaceID, parkedShownOnOverview)
	if err != nil {
		return err
	}
	byAgent, err := s.Parked.Stats(ctx, a.WorkspaceID)
	if err != nil {
		return err
	}
	return s.render(c, fiber.StatusOK, "overview", "Overview", "overview", overviewPage{
		Workspace: ws,
		Counts: []count{
			{"Bindings", len(bindings), "/bindings"},
			{"Configured tools", len(tools), "/tools"},
			{"Bundles", len(bundles), "/bundles"},
			{"Integrations", len(integrations), "/integrations"},
			{"Agents", len(agents), "/agents"},
			{"Users", len(users), "/users"},
			{"Live sessions", len(sessions), "/sessions"},
		},
		TaskCounts: taskCounts, TaskStatuses: task.Statuses, Parked: parked, ParkedByAgent: byAgent,
	})
}
