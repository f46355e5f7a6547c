package queue

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/hibiken/asynq"
	"github.com/redis/go-redis/v9"
	"gorm.io/gorm"

	"github.com/appruntime/appruntime/internal/apperr"
	"github.com/appruntime/appruntime/internal/audit"
	"github.com/appruntime/appruntime/internal/store"
)

// States of a queue's tasks, in the order the page shows them.
const (
	StatePending   = "pending"
	StateActive    = "active"
	StateScheduled = "scheduled"
	StateRetry     = "retry"
	StateArchived  = "archived"
	StateCompleted = "completed"
)

// States lists every state a page may list the tasks of.
var States = []string{StatePending, StateActive, StateScheduled, StateRetry, StateArchived, StateCompleted}

// ListLimit bounds the tasks one listing shows.
const ListLimit = 100

// maxPayloadShown keeps a listed payload readable; ours carry ids only.
const maxPayloadShown = 300

// Service reads and steers the deployment's queues. Build one per process.
type Service struct {
	store  *store.Store
	redis  redis.UniversalClient
	insp   *asynq.Inspector
	queues []string
}

// New returns a Service over the queues named (jobs.Queues: lookup, extract,
// script, events) in the asynq of rc; no other queue can be read or changed
// through it.
func New(st *store.Store, rc redis.UniversalClient, queues ...string) *Service {
	return &Service{store: st, redis: rc, insp: asynq.NewInspectorFromRedisClient(rc), queues: queues}
}

// pausedKey is the key asynq keeps while queue q is paused (asynq's
// base.PausedKey, stable since v0.18). The inspector reports it only for a
// queue that has had a task; this reads it for one that has not, so a queue
// paused before its first task shows as paused.
func pausedKey(q string) string { return "asynq:{" + q + "}:paused" }

// Info is one queue's state.
type Info struct {
	Name   string
	Paused bool
	// Counts of tasks by state (States).
	Pending, Active, Scheduled, Retry, Archived, Completed int
	// ProcessedToday and FailedToday count the runs since midnight UTC.
	ProcessedToday, FailedToday int
	// Latency is how long the oldest pending task has waited.
	Latency time.Duration
	// MemoryBytes is asynq's estimate of the queue's memory in Redis.
	MemoryBytes int64
	// MemoryUnavailable says the Redis refused the script asynq reads the
	// queue's state with (MEMORY USAGE inside Lua): its counts are unknown.
	MemoryUnavailable bool
}

// Server is one live asynq server of the worker fleet.
type Server struct {
	ID, Host    string
	PID         int
	Queues      []string
	Concurrency int
	Active      int
	Started     time.Time
	Status      string
}

// Task is one task of a queue.
type Task struct {
	ID, Queue, Kind, State string
	Payload                string
	Retried, MaxRetry      int
	LastError              string
	LastFailedAt           time.Time
	NextProcessAt          time.Time
	// WorkspaceID is the workspace the job's payload names (a /run's
	// carries its input), empty for a job that carries ids only: a page
	// shows another workspace's payload to operators only.
	WorkspaceID string
}

// MayRead says whether an admin of workspace, an operator or not, may read
// the task's payload: operators read every job's, others their workspace's
// and those that name none (they carry ids only).
func (t Task) MayRead(workspace string, operator bool) bool {
	return operator || t.WorkspaceID == "" || t.WorkspaceID == workspace
}

// MayReadError says whether an admin of workspace may read the task's last
// error. An error quotes what the job touched (a receiver's URL and reply,
// a data source's message), and a job that carries ids only cannot be told
// apart by workspace: operators read every job's error, others only those
// of jobs that name their workspace.
func (t Task) MayReadError(workspace string, operator bool) bool {
	return operator || (t.WorkspaceID != "" && t.WorkspaceID == workspace)
}

// Queues returns every queue's state, in the order New named them.
func (s *Service) Queues(ctx context.Context) ([]Info, error) {
	known, err := s.insp.Queues()
	if err != nil {
		return nil, apperr.Wrap(err, apperr.Unavailable, "the queues cannot be read; retry")
	}
	out := make([]Info, 0, len(s.queues))
	for _, q := range s.queues {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		if !slices.Contains(known, q) {
			// Nothing was ever enqueued on it; it may be paused already.
			paused, err := s.paused(ctx, q)
			if err != nil {
				return nil, err
			}
			out = append(out, Info{Name: q, Paused: paused})
			continue
		}
		qi, err := s.insp.GetQueueInfo(q)
		if err != nil && unsupported(err) {
			paused, err := s.paused(ctx, q)
			if err != nil {
				return nil, err
			}
			out = append(out, Info{Name: q, Paused: paused, MemoryUnavailable: true})
			continue
		}
		if err != nil {
			return nil, apperr.Wrap(err, apperr.Unavailable, "queue %s cannot be read; retry", q)
		}
		out = append(out, Info{
			Name: q, Paused: qi.Paused,
			Pending: qi.Pending, Active: qi.Active, Scheduled: qi.Scheduled, Retry: qi.Retry,
			Archived: qi.Archived, Completed: qi.Completed,
			ProcessedToday: qi.Processed, FailedToday: qi.Failed, Latency: qi.Latency,
			MemoryBytes: qi.MemoryUsage,
		})
	}
	return out, nil
}

// paused reads whether queue q is paused without asynq's script.
func (s *Service) paused(ctx context.Context, q string) (bool, error) {
	n, err := s.redis.Exists(ctx, pausedKey(q)).Result()
	if err != nil {
		return false, apperr.Wrap(err, apperr.Unavailable, "queue %s cannot be read; retry", q)
	}
	return n == 1, nil
}

// Servers returns the live servers that serve one of the queues, oldest first.
func (s *Service) Servers(context.Context) ([]Server, error) {
	all, err := s.insp.Servers()
	if err != nil {
		return nil, apperr.Wrap(err, apperr.Unavailable, "the servers cannot be read; retry")
	}
	var out []Server
	for _, si := range all {
		var qs []string
		for q := range si.Queues {
			if slices.Contains(s.queues, q) {
				qs = append(qs, q)
			}
		}
		if len(qs) == 0 {
			continue
		}
		sort.Strings(qs)
		out = append(out, Server{ID: si.ID, Host: si.Host, PID: si.PID, Queues: qs, Concurrency: si.Concurrency,
			Active: len(si.ActiveWorkers), Started: si.Started, Status: si.Status})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Started.Before(out[j].Started) })
	return out, nil
}

// Filter narrows a listing of tasks; both fields are case-insensitive and
// an empty one matches every task.
type Filter struct {
	// ID matches a task id by prefix (pages show ids cut).
	ID string
	// Kind matches a task type by substring.
	Kind string
}

// empty says the filter matches every task.
func (f Filter) empty() bool { return f.ID == "" && f.Kind == "" }

func (f Filter) matches(ti *asynq.TaskInfo) bool {
	return strings.HasPrefix(strings.ToLower(ti.ID), strings.ToLower(f.ID)) &&
		strings.Contains(strings.ToLower(ti.Type), strings.ToLower(f.Kind))
}

// MaxScanned bounds the tasks a filtered listing reads from Redis to find
// its matches (ten pages of ListLimit).
const MaxScanned = 10 * ListLimit

// MaxFilterLen bounds a filter field: a task id is 36 characters, a type
// a few words.
const MaxFilterLen = 100

// Listing is up to ListLimit tasks of a queue in one state.
type Listing struct {
	Tasks []Task
	// Truncated says there may be more: the listing is full, or a filtered
	// scan stopped at MaxScanned tasks before the end of the state.
	Truncated bool
}

// Tasks lists up to ListLimit tasks of queue in state that match f, reading
// at most MaxScanned of them.
func (s *Service) Tasks(_ context.Context, queue, state string, f Filter) (Listing, error) {
	if err := s.check(queue); err != nil {
		return Listing{}, err
	}
	if len(f.ID) > MaxFilterLen || len(f.Kind) > MaxFilterLen {
		return Listing{}, apperr.Invalidf("a task id or type to search for has at most %d characters", MaxFilterLen)
	}
	list := map[string]func(string, ...asynq.ListOption) ([]*asynq.TaskInfo, error){
		StatePending: s.insp.ListPendingTasks, StateActive: s.insp.ListActiveTasks,
		StateScheduled: s.insp.ListScheduledTasks, StateRetry: s.insp.ListRetryTasks,
		StateArchived: s.insp.ListArchivedTasks, StateCompleted: s.insp.ListCompletedTasks,
	}[state]
	if list == nil {
		return Listing{}, apperr.Invalidf("state %q is not one of %v", state, States)
	}
	var out Listing
	for page := 1; page <= MaxScanned/ListLimit; page++ {
		infos, err := list(queue, asynq.PageSize(ListLimit), asynq.Page(page))
		if errors.Is(err, asynq.ErrQueueNotFound) {
			return Listing{}, nil
		}
		if err != nil {
			return Listing{}, apperr.Wrap(err, apperr.Unavailable, "the tasks of queue %s cannot be read; retry", queue)
		}
		for _, ti := range infos {
			if len(out.Tasks) == ListLimit {
				out.Truncated = true
				return out, nil
			}
			if f.matches(ti) {
				out.Tasks = append(out.Tasks, taskOf(ti, state))
			}
		}
		if len(infos) < ListLimit {
			return out, nil
		}
		if f.empty() {
			// An unfiltered listing is its first page.
			out.Truncated = true
			return out, nil
		}
	}
	out.Truncated = true
	return out, nil
}

// Actions on a queue or a task, as the audit log names them.
const (
	ActionPause   = "queue.pause"
	ActionResume  = "queue.resume"
	ActionRun     = "queue.task.run"
	ActionArchive = "queue.task.archive"
	ActionDelete  = "queue.task.delete"
	ActionCancel  = "queue.task.cancel"
)

// Pause stops the queue's tasks from being handed out (they stay pending)
// until Resume; audited.
func (s *Service) Pause(ctx context.Context, workspaceID, actor, queue string) error {
	return s.act(ctx, workspaceID, actor, ActionPause, queue, "", func() error { return s.insp.PauseQueue(queue) })
}

// Resume hands the queue's tasks out again; audited.
func (s *Service) Resume(ctx context.Context, workspaceID, actor, queue string) error {
	return s.act(ctx, workspaceID, actor, ActionResume, queue, "", func() error { return s.insp.UnpauseQueue(queue) })
}

// RunTask makes a scheduled, retry or archived task pending now; audited.
func (s *Service) RunTask(ctx context.Context, workspaceID, actor, queue, id string) error {
	return s.act(ctx, workspaceID, actor, ActionRun, queue, id, func() error { return s.insp.RunTask(queue, id) })
}

// ArchiveTask moves a pending, scheduled or retry task to archived; audited.
func (s *Service) ArchiveTask(ctx context.Context, workspaceID, actor, queue, id string) error {
	return s.act(ctx, workspaceID, actor, ActionArchive, queue, id, func() error { return s.insp.ArchiveTask(queue, id) })
}

// DeleteTask deletes a task that is not active; audited.
func (s *Service) DeleteTask(ctx context.Context, workspaceID, actor, queue, id string) error {
	return s.act(ctx, workspaceID, actor, ActionDelete, queue, id, func() error { return s.insp.DeleteTask(queue, id) })
}

// CancelTask asks the worker running an active task to cancel its context
// (a handler must stop when it ends; a /run's caller hears
// jobwait.ErrCanceled at once); audited. A task that is not active is a
// conflict: a cancel would reach no worker.
func (s *Service) CancelTask(ctx context.Context, workspaceID, actor, queue, id string) error {
	return s.act(ctx, workspaceID, actor, ActionCancel, queue, id, func() error {
		ti, err := s.insp.GetTaskInfo(queue, id)
		if err != nil {
			return err
		}
		if ti.State != asynq.TaskStateActive {
			return apperr.Conflictf("task %s is %s, not active: only a running task can be cancelled", id, ti.State)
		}
		return s.insp.CancelProcessing(id)
	})
}

// act runs do on a queue of this deployment and records it in the audit log
// once it succeeded (Redis is not part of the database transaction).
func (s *Service) act(ctx context.Context, workspaceID, actor, action, queue, taskID string, do func() error) error {
	if err := s.check(queue); err != nil {
		return err
	}
	if err := do(); err != nil {
		switch {
		case errors.Is(err, asynq.ErrQueueNotFound):
			return apperr.NotFoundf("queue %s has no tasks yet", queue)
		case errors.Is(err, asynq.ErrTaskNotFound):
			return apperr.NotFoundf("task %s is not in queue %s", taskID, queue)
		case apperr.CodeOf(err) != apperr.Internal:
			return err
		}
		return apperr.Wrap(err, apperr.Conflict, "%s %s: %v", action, queue, err)
	}
	e := audit.Entry{WorkspaceID: workspaceID, Actor: actor, Action: action, TargetType: "queue", TargetID: queue}
	if taskID != "" {
		e.TargetType, e.TargetID, e.Detail = "queue_task", taskID, map[string]any{"queue": queue}
	}
	err := s.store.Tx(ctx, func(tx *gorm.DB) error { return audit.Record(ctx, tx, e) })
	if err != nil {
		return fmt.Errorf("queue: audit %s: %w", action, err)
	}
	return nil
}

// check refuses a queue that is not one of this deployment's.
func (s *Service) check(queue string) error {
	if !slices.Contains(s.queues, queue) {
		return apperr.NotFoundf("no queue %q", queue)
	}
	return nil
}
