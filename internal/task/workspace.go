package task

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	"gorm.io/gorm"

	"github.com/appruntime/appruntime/internal/apperr"
	"github.com/appruntime/appruntime/internal/store"
	"github.com/appruntime/appruntime/internal/webhook"
	"github.com/appruntime/appruntime/models"
)

// TasksPerPage is how many tasks one page of a workspace's task list holds.
const TasksPerPage = 50

// MaxFeedEventsShown bounds the feed events Inspect returns: the newest
// ones, so a long-running task's page stays readable.
const MaxFeedEventsShown = 200

// Statuses are the task statuses, in the order an admin reads them.
var Statuses = []string{models.TaskWaitingForInput, models.TaskRunning, models.TaskFailed, models.TaskCompleted}

// Summary is one task of a workspace as an admin's list shows it.
type Summary struct {
	ID        string
	AgentID   string
	AgentName string
	Title     string
	Status    string
	Priority  float64
	CreatedAt time.Time
	UpdatedAt time.Time
	// PendingAwaitID and ParkedSince are the task's oldest pending await and
	// when it was registered; empty and nil when nothing holds the task.
	PendingAwaitID string
	ParkedSince    *time.Time
}

// ListFilter selects a page of a workspace's tasks.
type ListFilter struct {
	Status string // one of Statuses; "" lists every task
	// Query finds text in a task's title, id, key details (key or value) or
	// agent's name, case-insensitively; "" finds every task.
	Query string
	// AgentID keeps the tasks of one agent; "" keeps every agent's.
	AgentID string
	// PoolID keeps the tasks routed to one review pool (task_review_pools,
	// docs/admins.md#review-pools-and-the-claim-limit); "" keeps every task.
	PoolID string
	Page   int // 1-based; 0 is the first page
	// Before is a page's Next: the page after it, found by its last
	// task's (created_at, id) through the index rather than by skipping
	// rows (keyset), so every page costs what the first does. Page then
	// only numbers it.
	Before string
}

// SummaryPage is one page of a workspace's tasks, newest first.
type SummaryPage struct {
	Tasks   []Summary
	Page    int
	HasMore bool
	// Next is the ListFilter.Before of the next page when HasMore.
	Next string
	// SearchBound is set when a search read only the list's newest
	// SearchBound tasks and found less than a page: older tasks were not
	// searched (no index serves the query; see SearchScanBound).
	SearchBound int
	// SearchIndexed says the store has the search's trigram indexes, so a
	// query with SearchIndexMinRunes letters or digits in a row searches
	// every task.
	SearchIndexed bool
}

// cursorOf is the keyset cursor after task t: its created_at and id.
func cursorOf(t models.Task) string {
	return t.CreatedAt.UTC().Format(time.RFC3339Nano) + "_" + t.ID
}

// parseCursor reads a cursorOf.
func parseCursor(c string) (time.Time, string, error) {
	at, id, ok := strings.Cut(c, "_")
	when, err := time.Parse(time.RFC3339Nano, at)
	if !ok || err != nil || !models.IsID(id) {
		return time.Time{}, "", apperr.Invalidf("before %q is not a page cursor of the task list", c)
	}
	return when, id, nil
}

// Detail is a task as an admin inspects it: its steps (oldest first), its
// newest feed events (oldest of them first, so the newest is last), its
// awaits and its key details.
type Detail struct {
	Summary
	Steps []StepView
	// Events holds at most MaxFeedEventsShown events; EventsTruncated says
	// that older ones were left out.
	Events          []EventView
	EventsTruncated bool
	Awaits          []AwaitView
	KeyValues       map[string]json.RawMessage
}

// EventView is one feed event.
type EventView struct {
	ID        int64
	StepID    *string
	Type      string
	Name      string
	Payload   json.RawMessage
	Actor     string
	CreatedAt time.Time
}

// AwaitView is one await of a task.
type AwaitView struct {
	ID             string
	SourceType     string
	CorrelationKey string // the step id, for an app-tool await
	Status         string
	Reason         string
	CreatedAt      time.Time
	ResolvedAt     *time.Time
	ResolvedBy     string
	// Outcome and DecisionReason are what the resolving action decided
	// (its declared outcome, the reviewer's reason), read from the task's
	// task_resumed feed event once the resume event is recorded
	// (docs/agent-platforms.md#webhook-event-catalogue); empty before, and
	// for an await an action declaring none resolved.
	Outcome        string
	DecisionReason string
}

// Pending reports whether the await still holds its task.
func (a AwaitView) Pending() bool { return a.Status == models.AwaitPending }

// ListWorkspace returns a page of the workspace's tasks, newest first, each
// with its agent's name and, when it is parked, since when.
func (s *Service) ListWorkspace(ctx context.Context, workspaceID string, f ListFilter) (SummaryPage, error) {
	if f.Status != "" && !slices.Contains(Statuses, f.Status) {
		return SummaryPage{}, apperr.Invalidf("status %q must be one of %s", f.Status, strings.Join(Statuses, ", "))
	}
	if f.AgentID != "" && !models.IsID(f.AgentID) {
		return SummaryPage{}, apperr.Invalidf("agent %q is not an id", f.AgentID)
	}
	if f.PoolID != "" && !models.IsID(f.PoolID) {
		return SummaryPage{}, apperr.Invalidf("pool %q is not an id", f.PoolID)
	}
	page := max(f.Page, 1)
	out := SummaryPage{Page: page}
	// The keyset's columns: the task's own, or, filtering by pool, the
	// copies on its task_review_pools row (0023), so the page is read from
	// (pool_id, task_created_at DESC, task_id DESC) rather than by walking
	// every newer task of the workspace (docs/performance.md#the-console-task-list).
	at, id := "tasks.created_at", "tasks.id"
	if f.PoolID != "" {
		at, id = "tp.task_created_at", "tp.task_id"
	}
	// list is the filtered list, newest first, without the search.
	list := func() *gorm.DB {
		q := s.st.DB.WithContext(ctx).Model(&models.Task{}).Where("tasks.workspace_id = ?", workspaceID)
		if f.PoolID != "" {
			q = q.Joins("JOIN task_review_pools tp ON tp.task_id = tasks.id AND tp.pool_id = ?", f.PoolID)
		}
		if f.Status != "" {
			q = q.Where("status = ?", f.Status)
		}
		if f.AgentID != "" {
			q = q.Where("agent_id = ?", f.AgentID)
		}
		return q.Order(at + " DESC, " + id + " DESC")
	}
	offset := (page - 1) * TasksPerPage
	var when time.Time
	var last string
	if f.Before != "" {
		var err error
		if when, last, err = parseCursor(f.Before); err != nil {
			return SummaryPage{}, err
		}
		offset = 0
	}
	// read is one page of the list, from the cursor, with the extra
	// conditions.
	read := func(conds ...listCond) ([]models.Task, error) {
		q := list().Select("tasks.*")
		if f.Before != "" {
			// at <= when is the index's bound in a generic plan too.
			q = q.Where(at+" <= ? AND ("+at+" < ? OR "+id+" < ?)", when, when, last)
		}
		for _, c := range conds {
			q = c(q)
		}
		var rows []models.Task
		err := q.Offset(offset).Limit(TasksPerPage + 1).Find(&rows).Error
		return rows, err
	}
	var rows []models.Task
	var err error
	if text := strings.TrimSpace(f.Query); text == "" {
		rows, err = read()
	} else {
		rows, err = s.search(ctx, workspaceID, text, &out, list, at, id, read)
	}
	if err != nil {
		return SummaryPage{}, fmt.Errorf("task: list workspace tasks: %w", err)
	}
	out.HasMore = len(rows) > TasksPerPage
	rows = rows[:min(len(rows), TasksPerPage)]
	if out.HasMore {
		out.Next = cursorOf(rows[len(rows)-1])
	}
	out.Tasks, err = s.summaries(ctx, workspaceID, rows)
	return out, err
}

// Parked returns up to limit tasks of the workspace held by a pending
// await, the longest-parked first: what needs an admin's attention.
func (s *Service) Parked(ctx context.Context, workspaceID string, limit int) ([]Summary, error) {
	db := s.st.DB.WithContext(ctx)
	var awaits []models.TaskAwait
	err := db.Model(&models.TaskAwait{}).Select("task_awaits.*").
		Joins("JOIN tasks ON tasks.id = task_awaits.task_id").
		Where("tasks.workspace_id = ? AND task_awaits.status = ?", workspaceID, models.AwaitPending).
		Order("task_awaits.created_at, task_awaits.id").Limit(limit).Find(&awaits).Error
	if err != nil {
		return nil, fmt.Errorf("task: list parked tasks: %w", err)
	}
	ids := []string{}
	for _, a := range awaits {
		if !slices.Contains(ids, a.TaskID) {
			ids = append(ids, a.TaskID)
		}
	}
	var rows []models.Task
	if len(ids) > 0 {
		if err := db.Where("id IN ?", ids).Find(&rows).Error; err != nil {
			return nil, fmt.Errorf("task: load parked tasks: %w", err)
		}
	}
	slices.SortFunc(rows, func(a, b models.Task) int { return slices.Index(ids, a.ID) - slices.Index(ids, b.ID) })
	return s.summaries(ctx, workspaceID, rows)
}

// CountByStatus returns how many tasks of the workspace are in each status;
// every status of Statuses is present.
func (s *Service) CountByStatus(ctx context.Context, workspaceID string) (map[string]int64, error) {
	var rows []struct {
		Status string
		N      int64
	}
	err := s.st.DB.WithContext(ctx).Model(&models.Task{}).Select("status, COUNT(*) AS n").
		Where("workspace_id = ?", workspaceID).Group("status").Scan(&rows).Error
	if err != nil {
		return nil, fmt.Errorf("task: count tasks: %w", err)
	}
	out := make(map[string]int64, len(Statuses))
	for _, st := range Statuses {
		out[st] = 0
	}
	for _, r := range rows {
		out[r.Status] = r.N
	}
	return out, nil
}

// Inspect returns a task of the workspace with its steps, feed, awaits and
// key details; a task of another workspace is not found.
func (s *Service) Inspect(ctx context.Context, workspaceID, taskID string) (Detail, error) {
	db := s.st.DB.WithContext(ctx)
	var t models.Task
	if !models.IsID(taskID) {
		return Detail{}, apperr.NotFoundf("task %s not found", taskID)
	}
	err := db.Where("id = ? AND workspace_id = ?", taskID, workspaceID).Take(&t).Error
	if err := store.NotFound(err, "task: inspect", "task "+taskID); err != nil {
		return Detail{}, err
	}
	sums, err := s.summaries(ctx, workspaceID, []models.Task{t})
	if err != nil {
		return Detail{}, err
	}
	d := Detail{Summary: sums[0], KeyValues: map[string]json.RawMessage{}}

	var steps []models.Step
	if err := db.Where("task_id = ?", t.ID).Order("created_at, id").Find(&steps).Error; err != nil {
		return Detail{}, fmt.Errorf("task: steps: %w", err)
	}
	for _, st := range steps {
		d.Steps = append(d.Steps, stepView(st))
	}

	var events []models.FeedEvent
	if err := db.Where("task_id = ?", t.ID).Order("id DESC").Limit(MaxFeedEventsShown + 1).Find(&events).Error; err != nil {
		return Detail{}, fmt.Errorf("task: feed events: %w", err)
	}
	d.EventsTruncated = len(events) > MaxFeedEventsShown
	events = events[:min(len(events), MaxFeedEventsShown)]
	for i := len(events) - 1; i >= 0; i-- {
		e := events[i]
		d.Events = append(d.Events, EventView{ID: e.ID, StepID: e.StepID, Type: e.Type, Name: e.Name,
			Payload: rawOrNull(e.Payload), Actor: e.Actor, CreatedAt: e.CreatedAt})
	}

	var awaits []models.TaskAwait
	if err := db.Where("task_id = ?", t.ID).Order("created_at, id").Find(&awaits).Error; err != nil {
		return Detail{}, fmt.Errorf("task: awaits: %w", err)
	}
	decisions, err := awaitDecisions(db, t.ID, len(awaits))
	if err != nil {
		return Detail{}, err
	}
	for _, a := range awaits {
		dec := decisions[a.ID]
		d.Awaits = append(d.Awaits, AwaitView{ID: a.ID, SourceType: a.SourceType, CorrelationKey: a.CorrelationKey,
			Status: a.Status, Reason: a.Reason, CreatedAt: a.CreatedAt, ResolvedAt: a.ResolvedAt, ResolvedBy: a.ResolvedBy,
			Outcome: dec.Outcome, DecisionReason: dec.Reason})
	}

	var kvs []models.AgentKeyValue
	if err := db.Where("task_id = ?", t.ID).Order("key").Find(&kvs).Error; err != nil {
		return Detail{}, fmt.Errorf("task: key values: %w", err)
	}
	for _, kv := range kvs {
		d.KeyValues[kv.Key] = rawOrNull(kv.Value)
	}
	return d, nil
}

// summaries adds to tasks their agents' names and their oldest pending awaits.
func (s *Service) summaries(ctx context.Context, workspaceID string, tasks []models.Task) ([]Summary, error) {
	out := make([]Summary, 0, len(tasks))
	if len(tasks) == 0 {
		return out, nil
	}
	db := s.st.DB.WithContext(ctx)
	ids := make([]string, len(tasks))
	for i, t := range tasks {
		ids[i] = t.ID
	}
	var agents []models.Agent
	if err := db.Select("id", "name").Where("workspace_id = ?", workspaceID).Find(&agents).Error; err != nil {
		return nil, fmt.Errorf("task: agent names: %w", err)
	}
	names := make(map[string]string, len(agents))
	for _, a := range agents {
		names[a.ID] = a.Name
	}
	var pending []models.TaskAwait
	err := db.Where("task_id IN ? AND status = ?", ids, models.AwaitPending).Order("created_at, id").Find(&pending).Error
	if err != nil {
		return nil, fmt.Errorf("task: pending awaits: %w", err)
	}
	oldest := make(map[string]models.TaskAwait, len(pending))
	for _, a := range pending {
		if _, seen := oldest[a.TaskID]; !seen {
			oldest[a.TaskID] = a
		}
	}
	for _, t := range tasks {
		sum := Summary{ID: t.ID, AgentID: t.AgentID, AgentName: names[t.AgentID], Title: t.Title, Status: t.Status,
			Priority: t.Priority, CreatedAt: t.CreatedAt, UpdatedAt: t.UpdatedAt}
		if a, ok := oldest[t.ID]; ok {
			since := a.CreatedAt
			sum.PendingAwaitID, sum.ParkedSince = a.ID, &since
		}
		out = append(out, sum)
	}
	return out, nil
}

// SessionSample is a step that runs a binding: the session values a bundle
// on it would carry.
type SessionSample struct{ TaskID, AgentID, StepID string }

// LatestSessionOf returns the workspace's newest step whose configured tool
// is bound to bindingID, the sample session values the console's "try an op"
// starts from (the demo's own ids in dev mode); ok is false when no step
// runs the binding yet.
func (s *Service) LatestSessionOf(ctx context.Context, workspaceID, bindingID string) (SessionSample, bool, error) {
	var rows []SessionSample
	err := s.st.DB.WithContext(ctx).Table("steps").
		Select("steps.task_id AS task_id, tasks.agent_id AS agent_id, steps.id AS step_id").
		Joins("JOIN tasks ON tasks.id = steps.task_id").
		Joins("JOIN configured_tools ON configured_tools.id = steps.configured_tool_id").
		Where("tasks.workspace_id = ? AND configured_tools.binding_id = ?", workspaceID, bindingID).
		Order("steps.created_at DESC, steps.id DESC").Limit(1).Scan(&rows).Error
	if err != nil {
		return SessionSample{}, false, fmt.Errorf("task: latest step of binding %s: %w", bindingID, err)
	}
	if len(rows) == 0 {
		return SessionSample{}, false, nil
	}
	return rows[0], true, nil
}

// awaitDecisions returns the decisions of the task's resolved awaits by
// await id, from its task_resumed feed events (the resume event's payload,
// decision included). A task that never parked costs no query.
func awaitDecisions(db *gorm.DB, taskID string, awaits int) (map[string]webhook.Decision, error) {
	out := map[string]webhook.Decision{}
	if awaits == 0 {
		return out, nil
	}
	var rows []models.FeedEvent
	if err := db.Select("payload").Where("task_id = ? AND type = ?", taskID, models.FeedTaskResumed).Find(&rows).Error; err != nil {
		return nil, fmt.Errorf("task: resume events: %w", err)
	}
	for _, r := range rows {
		var ev webhook.Event
		if r.Payload.Decode(&ev) == nil && ev.Decision != nil && ev.AwaitID != "" {
			out[ev.AwaitID] = *ev.Decision
		}
	}
	return out, nil
}
