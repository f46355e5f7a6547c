package console

import (
	"html/template"
	"slices"
	"strings"

	"github.com/gofiber/fiber/v2"

	"github.com/appruntime/appruntime/internal/agentcall"
	"github.com/appruntime/appruntime/internal/review"
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
	// Calls are the task's agent tool calls, with their results and cards.
	Calls []callCard
	// Apps are the agent's replies; their app blocks run on Run.
	Apps appHost
	// Deliveries are the attempts to post the task's resume events to its
	// agent's webhook, newest first (the first page of them; the Webhooks
	// page lists every one).
	Deliveries []review.Delivery
}

// callCard is a tool call as the page shows it: the result's display
// channel, markdown rendered safely (internal/markdown), or the card.
type callCard struct {
	agentcall.CallView
	HTML template.HTML
}

// showTask answers GET /tasks/:id: the task's steps, its tool calls and
// replies, its feed (newest last) and its awaits, with release and abort
// buttons on a pending one.
func (s *server) showTask(c *fiber.Ctx) error {
	ctx := c.UserContext()
	d, err := s.Tasks.Inspect(ctx, adminOf(c).WorkspaceID, c.Params("id"))
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
	calls, err := s.AgentCalls.ListCalls(ctx, d.ID)
	if err != nil {
		return err
	}
	replies, err := s.Replies.List(ctx, d.ID)
	if err != nil {
		return err
	}
	pg := taskPage{Detail: d, AppToolSteps: apps, Actors: actors,
		Apps: s.newAppHost(d.ID, "/tasks/"+d.ID, replies, "The agent has not replied yet.")}
	pg.Apps.Closed = composerClosed(d.Status)
	for _, call := range calls {
		card := callCard{CallView: call}
		if call.Result != nil && call.Result.EmbedURL != "" && slices.Contains(pg.Apps.OwnOrigins, originOf(call.Result.EmbedURL)) {
			// A page of our own origins would share the console's origin
			// in its frame: it is shown as its text only.
			call.Result.Display = "text"
		}
		if call.Result != nil {
			// Rendered by internal/markdown: raw HTML escaped, only
			// absolute links live, no images.
			card.HTML = template.HTML(call.Result.HTML)
		}
		pg.Calls = append(pg.Calls, card)
	}
	title := d.Title
	if title == "" {
		title = "Task " + shortID(d.ID)
	}
	deliveries, err := s.Resumes.Deliveries(ctx, adminOf(c).WorkspaceID, review.DeliveryFilter{TaskID: d.ID})
	if err != nil {
		return err
	}
	pg.Deliveries = deliveries.Deliveries
	c.Set(fiber.HeaderContentSecurityPolicy, taskCSP)
	return s.render(c, fiber.StatusOK, "task", title, "tasks", pg)
}

// taskCSP is the task page's policy: pageCSP, except that it frames the
// agent's app assets (served by this console, each under its own sandboxed
// no-network policy) and tool results' embedUrl pages (absolute https).
var taskCSP = strings.Replace(pageCSP, "frame-src 'none'", "frame-src 'self' https:", 1)
