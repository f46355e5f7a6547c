package console

import (
	"github.com/gofiber/fiber/v2"

	"github.com/appruntime/appruntime/internal/task"
	"github.com/appruntime/appruntime/models"
)

// taskPage is a task's page.
type taskPage struct {
	task.Detail
	// AppToolSteps are the steps whose artifact the console can open.
	AppToolSteps map[string]bool
	// Actors names the people and agents of the feed and the awaits.
	Actors map[string]string
}

// showTask answers GET /tasks/:id: the task's steps, its feed (newest last)
// and its awaits, with release and abort buttons on a pending one.
func (s *server) showTask(c *fiber.Ctx) error {
	d, err := s.Tasks.Inspect(c.UserContext(), adminOf(c).WorkspaceID, c.Params("id"))
	if err != nil {
		return err
	}
	apps := map[string]bool{}
	for _, st := range d.Steps {
		if st.Kind == models.StepAppTool {
			apps[st.ID] = true
		}
	}
	actors, err := s.actorNames(c)
	if err != nil {
		return err
	}
	title := d.Title
	if title == "" {
		title = "Task " + shortID(d.ID)
	}
	return s.render(c, fiber.StatusOK, "task", title, "tasks", taskPage{Detail: d, AppToolSteps: apps, Actors: actors})
}
