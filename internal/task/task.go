// Package task is the agent platform's side of appruntime: an agent creates
// tasks, adds app-tool steps whose output is an artifact (a bundle, a
// binding and the step's params), and reads them back. An artifact whose
// configured tool has await_review parks its task on a task_awaits row in
// the same transaction, and queues the key-detail summary pass (Summarize).
package task

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"math"
	"strings"
	"time"
	"unicode/utf8"

	"gorm.io/gorm"

	"github.com/appruntime/appruntime/internal/apperr"
	"github.com/appruntime/appruntime/internal/feed"
	"github.com/appruntime/appruntime/internal/llm"
	"github.com/appruntime/appruntime/internal/store"
	"github.com/appruntime/appruntime/models"
)

// MaxTitleLength bounds a task's title.
const MaxTitleLength = 500

// Caller is the agent a request speaks for: the agent token's workspace and
// agent, and the actor recorded in the feed.
type Caller struct {
	WorkspaceID string
	AgentID     string
	Actor       string
}

// Service creates tasks and their app-tool steps.
type Service struct {
	st            *store.Store
	bundleBaseURL string
	deps          Deps
	afterQueue    func(context.Context)
	searchIndex   indexedSearch
}

// Options are what a Service is built from.
type Options struct {
	Store *store.Store
	Log   *slog.Logger
	// BundleBaseURL is Config.BundleBaseURL; an artifact's bundle_url is
	// BundleBaseURL/<id>/<version>.
	BundleBaseURL string
	// LLM runs the summary pass; nil skips it.
	LLM *llm.Client
	// AfterQueueFunc runs after a step's transaction committed outbox rows
	// (a producer's job, a summary pass): the platform nudges the outbox
	// relay, so the job is queued now rather than at the relay's next poll.
	// Nil waits for the poll.
	AfterQueueFunc func(context.Context)
}

// NewService returns a task service.
func NewService(o Options) *Service {
	return &Service{st: o.Store, bundleBaseURL: o.BundleBaseURL, deps: Deps{DB: o.Store.DB, LLM: o.LLM, Log: o.Log}, afterQueue: o.AfterQueueFunc,
		searchIndex: indexedSearch{firstScan: searchFirstScan, scanBound: SearchScanBound}}
}

// Summarize runs the summary pass of an outbox row with the service's
// dependencies; see the package function Summarize.
func (s *Service) Summarize(ctx context.Context, outboxID string) error {
	return Summarize(ctx, s.deps, outboxID)
}

// TaskInput is a task as the agent API takes it.
type TaskInput struct {
	Title    string   `json:"title"`
	Priority *float64 `json:"priority,omitempty"`
}

// View is a task with its steps and key details, as the agent API shows it.
type View struct {
	ID        string                     `json:"id"`
	AgentID   string                     `json:"agent_id"`
	Title     string                     `json:"title"`
	Status    string                     `json:"status"`
	Priority  float64                    `json:"priority"`
	Steps     []StepView                 `json:"steps"`
	KeyValues map[string]json.RawMessage `json:"key_values"`
	CreatedAt time.Time                  `json:"created_at"`
	UpdatedAt time.Time                  `json:"updated_at"`
}

// StepView is one step; an app-tool step's output is its artifact.
type StepView struct {
	ID               string          `json:"id"`
	TaskID           string          `json:"task_id"`
	Kind             string          `json:"kind"`
	ConfiguredToolID *string         `json:"configured_tool_id"`
	Status           string          `json:"status"`
	Input            json.RawMessage `json:"input"`
	Output           json.RawMessage `json:"output"`
	Error            string          `json:"error"`
	CreatedAt        time.Time       `json:"created_at"`
	UpdatedAt        time.Time       `json:"updated_at"`
}

func stepView(s models.Step) StepView {
	return StepView{ID: s.ID, TaskID: s.TaskID, Kind: s.Kind, ConfiguredToolID: s.ConfiguredToolID, Status: s.Status,
		Input: rawOrNull(s.Input), Output: rawOrNull(s.Output), Error: s.Error, CreatedAt: s.CreatedAt, UpdatedAt: s.UpdatedAt}
}

func rawOrNull(j models.JSON) json.RawMessage {
	if len(j) == 0 {
		return json.RawMessage("null")
	}
	return json.RawMessage(j)
}

// Create starts a running task for the caller's agent.
func (s *Service) Create(ctx context.Context, c Caller, in TaskInput) (View, error) {
	title := strings.TrimSpace(in.Title)
	if utf8.RuneCountInString(title) > MaxTitleLength {
		return View{}, apperr.Invalidf("title is longer than %d characters", MaxTitleLength)
	}
	t := models.Task{ID: models.NewID(), WorkspaceID: c.WorkspaceID, AgentID: c.AgentID, Title: title, Status: models.TaskRunning}
	if in.Priority != nil {
		if math.IsNaN(*in.Priority) || math.IsInf(*in.Priority, 0) {
			return View{}, apperr.Invalidf("priority must be a finite number")
		}
		t.Priority = *in.Priority
	}
	if err := s.st.DB.WithContext(ctx).Create(&t).Error; err != nil {
		return View{}, fmt.Errorf("task: create: %w", err)
	}
	return View{ID: t.ID, AgentID: t.AgentID, Title: t.Title, Status: t.Status, Priority: t.Priority,
		Steps: []StepView{}, KeyValues: map[string]json.RawMessage{}, CreatedAt: t.CreatedAt, UpdatedAt: t.UpdatedAt}, nil
}

// Get returns one of the caller's agent's tasks with its steps (oldest
// first) and key details; any other task is not found.
func (s *Service) Get(ctx context.Context, c Caller, taskID string) (View, error) {
	db := s.st.DB.WithContext(ctx)
	t, err := ownTask(ctx, db, c, taskID)
	if err != nil {
		return View{}, err
	}
	var steps []models.Step
	if err := db.Where("task_id = ?", t.ID).Order("created_at, id").Find(&steps).Error; err != nil {
		return View{}, fmt.Errorf("task: steps: %w", err)
	}
	var kvs []models.AgentKeyValue
	if err := db.Where("task_id = ?", t.ID).Order("key").Find(&kvs).Error; err != nil {
		return View{}, fmt.Errorf("task: key values: %w", err)
	}
	v := View{ID: t.ID, AgentID: t.AgentID, Title: t.Title, Status: t.Status, Priority: t.Priority,
		Steps: make([]StepView, 0, len(steps)), KeyValues: make(map[string]json.RawMessage, len(kvs)),
		CreatedAt: t.CreatedAt, UpdatedAt: t.UpdatedAt}
	for _, st := range steps {
		v.Steps = append(v.Steps, stepView(st))
	}
	for _, kv := range kvs {
		v.KeyValues[kv.Key] = rawOrNull(kv.Value)
	}
	return v, nil
}

// ownTask loads a task of the caller's agent; another agent's is not found.
func ownTask(ctx context.Context, db *gorm.DB, c Caller, taskID string) (models.Task, error) {
	var t models.Task
	if !models.IsID(taskID) {
		return t, apperr.NotFoundf("task not found")
	}
	err := db.WithContext(ctx).Where("id = ? AND agent_id = ? AND workspace_id = ?", taskID, c.AgentID, c.WorkspaceID).Take(&t).Error
	return t, store.NotFound(err, "task: find", "task")
}

// Events returns the feed events of the agent's task after the cursor
// (feed.AgentTaskEvents): how a platform without a resume webhook learns
// that its task resumed.
func (s *Service) Events(ctx context.Context, c Caller, taskID string, after int64) (feed.EventPage, error) {
	return feed.AgentTaskEvents(ctx, s.st.DB, c.WorkspaceID, c.AgentID, taskID, after)
}
