package api

import (
	"github.com/gofiber/fiber/v2"

	"github.com/appruntime/appruntime/internal/task"
	"github.com/appruntime/appruntime/models"
)

// agentTaskRoutes mounts the agent platform's task API (agent token): create
// a task, read it with its steps, add an app-tool step.
func (s *server) agentTaskRoutes(app *fiber.App) {
	agentOnly := s.requireToken(models.ScopeAgent)
	app.Post("/api/agent/tasks", agentOnly, s.createAgentTask)
	app.Get("/api/agent/tasks/:id", agentOnly, s.getAgentTask)
	app.Post("/api/agent/tasks/:id/steps", agentOnly, s.addAgentTaskStep)
	s.agentFileRoutes(app)
}

// agentCaller is the agent an agent token speaks for.
func agentCaller(c *fiber.Ctx) task.Caller {
	p := principalOf(c)
	return task.Caller{WorkspaceID: p.WorkspaceID, AgentID: p.AgentID, Actor: p.Actor()}
}

// createAgentTask answers POST /api/agent/tasks {"title","priority"} with
// the running task.
func (s *server) createAgentTask(c *fiber.Ctx) error {
	var in task.TaskInput
	if err := decodeStrictBody(c, &in); err != nil {
		return err
	}
	t, err := s.Tasks.Create(c.UserContext(), agentCaller(c), in)
	if err != nil {
		return err
	}
	return c.Status(fiber.StatusCreated).JSON(t)
}

// getAgentTask answers GET /api/agent/tasks/:id with the task, its steps
// and its key details; another agent's task is a 404.
func (s *server) getAgentTask(c *fiber.Ctx) error {
	t, err := s.Tasks.Get(c.UserContext(), agentCaller(c), c.Params("id"))
	if err != nil {
		return err
	}
	return c.JSON(t)
}

// addAgentTaskStep answers POST /api/agent/tasks/:id/steps
// {"configured_tool_id","params"} with the completed app-tool step, whose
// output is the artifact.
func (s *server) addAgentTaskStep(c *fiber.Ctx) error {
	var in task.StepInput
	if err := decodeStrictBody(c, &in); err != nil {
		return err
	}
	st, err := s.Tasks.AddAppToolStep(c.UserContext(), agentCaller(c), c.Params("id"), in)
	if err != nil {
		return err
	}
	return c.Status(fiber.StatusCreated).JSON(st)
}
