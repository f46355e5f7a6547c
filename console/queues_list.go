package console

import (
	"slices"

	"github.com/gofiber/fiber/v2"

	"github.com/appruntime/appruntime/internal/queue"
)

// queuesPage is the Queues page: every queue, the live servers, and, when
// the query names a queue, its daily counts and its tasks in one state,
// filtered by id and type.
type queuesPage struct {
	Queues  []queue.Info
	Servers []queue.Server
	States  []string
	// Queue and State are the listing asked for (?queue=&state=), Filter
	// its search (?id=&kind=); Tasks the tasks found.
	Queue, State string
	Filter       queue.Filter
	Tasks        queue.Listing
	// Selected is the queue's row of Queues; History and Chart its daily
	// counts (History.Unavailable says why there are none).
	Selected *queue.Info
	History  queue.History
	Chart    historyChart
	// Operator says whether the admin may pause queues and act on tasks
	// (the buttons are shown only then).
	Operator bool
	// Workspace is the admin's: another's payloads are for operators only.
	Workspace string
	// MaxScanned is how many tasks a search reads at most (queue.MaxScanned).
	MaxScanned int
	// RefreshSeconds is the auto-refresh period (console/static/queues.js).
	RefreshSeconds int
}

// queuesRefreshSeconds is how often the Queues page reloads itself while
// its auto-refresh is on.
const queuesRefreshSeconds = 10

// Filtered says the listing is narrowed by a search.
func (p queuesPage) Filtered() bool { return p.Filter != queue.Filter{} }

// listQueues answers GET /queues[?queue=Q&state=S&id=I&kind=K].
func (s *server) listQueues(c *fiber.Ctx) error {
	ctx := c.UserContext()
	qs, err := s.JobQueues.Queues(ctx)
	if err != nil {
		return err
	}
	servers, err := s.JobQueues.Servers(ctx)
	if err != nil {
		return err
	}
	p := queuesPage{Queues: qs, Servers: servers, States: queue.States, Queue: c.Query("queue"), State: c.Query("state", queue.StatePending),
		Filter:   queue.Filter{ID: c.Query("id"), Kind: c.Query("kind")},
		Operator: s.isOperator(adminOf(c)), Workspace: adminOf(c).WorkspaceID, RefreshSeconds: queuesRefreshSeconds, MaxScanned: queue.MaxScanned}
	if p.Queue != "" {
		if !slices.Contains(queue.States, p.State) {
			p.State = queue.StatePending
		}
		if p.Tasks, err = s.JobQueues.Tasks(ctx, p.Queue, p.State, p.Filter); err != nil {
			return err
		}
		if p.History, err = s.JobQueues.History(ctx, p.Queue, queue.HistoryDays); err != nil {
			return err
		}
		p.Chart = newHistoryChart(p.History)
		for i := range p.Queues {
			if p.Queues[i].Name == p.Queue {
				p.Selected = &p.Queues[i]
			}
		}
	}
	return s.render(c, fiber.StatusOK, "queues", "Queues", "queues", p)
}
