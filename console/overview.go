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
	// Next is the one thing to do now.
	Next nextStep
}

// nextStep is the overview's Next panel, computed from the workspace's
// state: the longest-parked task to review (open its artifact, approve, see
// the task resume), else where the reviewed tasks' resumes went, else how to
// park a first one.
type nextStep struct {
	// Parked is the longest-parked task; nil when none waits for a review.
	Parked *task.Summary
	// Tasks counts every task of the workspace.
	Tasks int64
}

// nextStepOf picks the Next panel's content from the parked tasks (longest
// parked first) and the task counts per status.
func nextStepOf(parked []task.Summary, counts map[string]int64) nextStep {
	var n nextStep
	if len(parked) > 0 {
		n.Parked = &parked[0]
	}
	for _, c := range counts {
		n.Tasks += c
	}
	return n
}

// count is one figure of the overview, linking to its page.
type count struct {
	Label string
	N     int
	Link  string
}

// showOverview answers GET /: the workspace, what it holds, and the parked
// tasks that need attention, longest-parked first, under a Next panel that
// says what to do now.
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
		Next: nextStepOf(parked, taskCounts),
	})
}
