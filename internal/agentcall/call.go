package agentcall

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"gorm.io/gorm"

	"github.com/appruntime/appruntime/internal/agenttool"
	"github.com/appruntime/appruntime/internal/apperr"
	"github.com/appruntime/appruntime/internal/feed"
	"github.com/appruntime/appruntime/internal/markdown"
	"github.com/appruntime/appruntime/internal/store"
	"github.com/appruntime/appruntime/internal/strictjson"
	"github.com/appruntime/appruntime/internal/task"
	"github.com/appruntime/appruntime/jobs"
	"github.com/appruntime/appruntime/models"
)

// MaxInputBytes bounds a call's input (compact JSON).
const MaxInputBytes = 64 << 10

// CallInput is POST /api/agent/tasks/{id}/tool-calls.
type CallInput struct {
	Name  string          `json:"name"`
	Input json.RawMessage `json:"input,omitempty"`
}

// CallView is a tool call as the agent API and the host see it: its
// status and, once it has one, its result (content for the agent; the
// display channel and, for markdown, the safely rendered HTML for a
// host), or the pending-input card that parks its task.
type CallView struct {
	ID        string                  `json:"id"`
	TaskID    string                  `json:"task_id"`
	StepID    string                  `json:"step_id"`
	Name      string                  `json:"name"`
	Input     json.RawMessage         `json:"input"`
	Status    string                  `json:"status"`
	Result    *ResultView             `json:"result,omitempty"`
	Pending   *agenttool.PendingInput `json:"pending_input,omitempty"`
	Error     string                  `json:"error,omitempty"`
	ClickedBy string                  `json:"clicked_by,omitempty"`
	Button    string                  `json:"clicked_button,omitempty"`
	CreatedAt time.Time               `json:"created_at"`
	UpdatedAt time.Time               `json:"updated_at"`
}

// ResultView is a call's result: what the agent reads and what a host shows.
type ResultView struct {
	Content  string `json:"content"`
	Markdown string `json:"markdown,omitempty"`
	EmbedURL string `json:"embedUrl,omitempty"`
	// Display is the channel a host shows: embed, markdown or text.
	Display string `json:"display"`
	// HTML is Markdown rendered by internal/markdown (raw HTML escaped,
	// only absolute links live), when Display is markdown.
	HTML string `json:"html,omitempty"`
}

// ViewOf is row as a CallView.
func ViewOf(row models.ToolCall) CallView {
	v := CallView{ID: row.ID, TaskID: row.TaskID, StepID: row.StepID, Name: row.Name, Input: json.RawMessage(row.Input),
		Status: row.Status, Error: row.Error, ClickedBy: row.ClickedBy, Button: row.ClickedButton,
		CreatedAt: row.CreatedAt, UpdatedAt: row.UpdatedAt}
	if len(row.Result) > 0 {
		var r agenttool.Reply
		if json.Unmarshal(row.Result, &r) == nil {
			v.Result = resultView(r)
		}
	}
	if len(row.Card) > 0 {
		var card agenttool.PendingInput
		if json.Unmarshal(row.Card, &card) == nil {
			v.Pending = &card
		}
	}
	return v
}

func resultView(r agenttool.Reply) *ResultView {
	v := &ResultView{Content: r.Content, Markdown: r.Markdown, EmbedURL: r.EmbedURL, Display: string(r.Display())}
	if r.Display() == agenttool.DisplayMarkdown {
		html, err := markdown.Render(r.Markdown)
		if err != nil {
			v.Display = string(agenttool.DisplayText)
		} else {
			v.HTML = html
		}
	}
	return v
}

// Call runs one of the caller's agent's tools on one of its running tasks
// and returns the call once it has its result (within the deadline). The
// input (absent means {}) is checked against the tool's schema (400); an
// unknown tool is 404; a task that is not running is 409. The call is
// recorded first as a running step, so a call cut off by a crash is seen;
// then its target is dispatched and the step, the call and a tool_call
// feed event record the outcome together. A pending_input reply parks the
// task (waiting_for_input) on an await whose source is the call. A failed
// dispatch answers its error (403 for a refused address, 502 for an
// endpoint's failure, 504 past the deadline) after recording it.
func (s *Service) Call(ctx context.Context, c task.Caller, taskID string, in CallInput) (CallView, error) {
	db := s.st.DB.WithContext(ctx)
	t, err := callerTask(ctx, db, c, taskID)
	if err != nil {
		return CallView{}, err
	}
	if in.Name == "" {
		return CallView{}, apperr.Invalidf("name (the tool's name) is required")
	}
	var row models.AgentToolDeclaration
	err = db.Where("agent_id = ? AND workspace_id = ? AND name = ?", c.AgentID, c.WorkspaceID, in.Name).Take(&row).Error
	if err := store.NotFound(err, "agentcall: find tool", fmt.Sprintf("tool %q", clip(in.Name, 64))); err != nil {
		return CallView{}, err
	}
	decl, err := decode(row)
	if err != nil {
		return CallView{}, err
	}
	input := in.Input
	if strictjson.IsNull(input) {
		input = json.RawMessage(`{}`)
	}
	input = compact(input)
	if len(input) > MaxInputBytes {
		return CallView{}, apperr.New(apperr.TooLarge, "input is %d bytes; at most %d are allowed", len(input), MaxInputBytes)
	}
	if err := decl.CheckInput(input); err != nil {
		return CallView{}, err
	}

	now := time.Now().UTC()
	step := models.Step{ID: models.NewID(), TaskID: t.ID, Kind: models.StepAgentTool, Status: models.StepRunning,
		Input: models.MustJSON(map[string]any{"name": decl.Name, "input": input}), CreatedAt: now, UpdatedAt: now}
	call := models.ToolCall{ID: models.NewID(), TaskID: t.ID, StepID: step.ID, AgentID: c.AgentID, DeclarationID: &row.ID,
		Name: decl.Name, Input: models.JSON(input), Status: models.ToolCallRunning, CreatedAt: now, UpdatedAt: now}
	err = s.st.Tx(ctx, func(tx *gorm.DB) error {
		if err := tx.Create(&step).Error; err != nil {
			return fmt.Errorf("agentcall: create step: %w", err)
		}
		if err := tx.Create(&call).Error; err != nil {
			return fmt.Errorf("agentcall: create tool call: %w", err)
		}
		return nil
	})
	if err != nil {
		return CallView{}, err
	}

	out, callErr := s.run(ctx, c.WorkspaceID, jobs.AgentToolCall{ToolCallID: call.ID})
	if err := s.finishCall(context.WithoutCancel(ctx), c, &call, &step, decl, out.Reply, out.Producer, callErr); err != nil {
		if callErr != nil {
			return CallView{}, err
		}
		// The result could not be stored: the call fails instead of
		// staying running, and says so.
		s.log.ErrorContext(ctx, "agentcall: record tool result", "tool_call_id", call.ID, "error", err.Error())
		callErr = apperr.New(apperr.BadGateway, "tool %q answered a result that could not be recorded", decl.Name)
		call.Result, call.Card, step.Output = nil, nil, nil
		if err := s.finishCall(context.WithoutCancel(ctx), c, &call, &step, decl, agenttool.Reply{}, out.Producer, callErr); err != nil {
			return CallView{}, err
		}
	}
	if callErr != nil {
		return CallView{}, callErr
	}
	return ViewOf(call), nil
}

// finishCall records a call's outcome: the call, its step and a tool_call
// feed event, and for a card the await that parks the task.
func (s *Service) finishCall(ctx context.Context, c task.Caller, call *models.ToolCall, step *models.Step, decl agenttool.Declaration,
	reply agenttool.Reply, producer string, callErr error) error {
	now := time.Now().UTC()
	call.UpdatedAt, step.UpdatedAt = now, now
	call.Producer = producer
	reply = reply.Storable()
	payload := map[string]any{"tool_call_id": call.ID, "name": decl.Name, "display_name": decl.DisplayName}
	switch {
	case callErr != nil:
		_, _, msg := apperr.Public(callErr)
		call.Status, call.Error = models.ToolCallFailed, msg
		step.Status, step.Error = models.StepFailed, msg
		payload["status"], payload["error"] = call.Status, msg
	case reply.Pending != nil:
		call.Status, call.Card = models.ToolCallPendingInput, models.MustJSON(reply.Pending)
		step.Status = models.StepCompleted
		step.Output = models.MustJSON(map[string]any{"tool_call_id": call.ID, "pending_input": reply.Pending})
		payload["status"], payload["pending_input"] = call.Status, reply.Pending
	default:
		call.Status, call.Result = models.ToolCallCompleted, models.MustJSON(reply)
		step.Status = models.StepCompleted
		step.Output = models.MustJSON(map[string]any{"tool_call_id": call.ID, "result": reply})
		payload["status"], payload["result"] = call.Status, resultView(reply)
	}
	// Recorded once: only a call still running changes, so a retry after
	// a commit whose answer a restart cut, or a call the sweep failed
	// meanwhile (FailCutCalls), writes nothing more.
	record := func(tx *gorm.DB) error {
		res := tx.Where("status = ?", models.ToolCallRunning).Select("*").Updates(call)
		if res.Error != nil {
			return fmt.Errorf("agentcall: record tool call: %w", res.Error)
		}
		if res.RowsAffected == 0 {
			return nil
		}
		if err := tx.Select("*").Updates(step).Error; err != nil {
			return fmt.Errorf("agentcall: record step: %w", err)
		}
		if reply.Pending != nil && callErr == nil {
			if err := park(tx, call, now); err != nil {
				return err
			}
		}
		ev := models.FeedEvent{TaskID: call.TaskID, StepID: &step.ID, Type: models.FeedToolCall, Name: decl.Name,
			Payload: models.MustJSON(payload), Actor: c.Actor, CreatedAt: now}
		return feed.Insert(ctx, tx, false, ev)
	}
	// A restart of the platform's database under the recording is retried
	// on a new connection for up to RecordRetryFor
	// (docs/architecture.md#12-postgres-records-redis-carries).
	return s.st.TxRetrying(ctx, RecordRetryFor, record)
}

// park registers the await of a call's card and parks its task. Its
// correlation key is the call's step, as an app-tool await's is.
func park(tx *gorm.DB, call *models.ToolCall, now time.Time) error {
	aw := models.TaskAwait{ID: models.NewID(), TaskID: call.TaskID, SourceType: models.AwaitSourceToolCall,
		CorrelationKey: call.StepID, Status: models.AwaitPending, CreatedAt: now}
	if err := tx.Create(&aw).Error; err != nil {
		return fmt.Errorf("agentcall: create await: %w", err)
	}
	err := tx.Model(&models.Task{}).Where("id = ? AND status IN ?", call.TaskID, []string{models.TaskRunning, models.TaskWaitingForInput}).
		Updates(map[string]any{"status": models.TaskWaitingForInput, "updated_at": now}).Error
	if err != nil {
		return fmt.Errorf("agentcall: park task: %w", err)
	}
	return nil
}

// callerTask loads one of the caller's agent's tasks and checks it is
// running: a tool is called by an agent at work.
func callerTask(ctx context.Context, db *gorm.DB, c task.Caller, taskID string) (models.Task, error) {
	var t models.Task
	if !models.IsID(taskID) {
		return t, apperr.NotFoundf("task not found")
	}
	err := db.WithContext(ctx).Where("id = ? AND workspace_id = ? AND agent_id = ?", taskID, c.WorkspaceID, c.AgentID).Take(&t).Error
	if err := store.NotFound(err, "agentcall: find task", "task"); err != nil {
		return t, err
	}
	if t.Status != models.TaskRunning {
		return t, apperr.Conflictf("task is %s; a tool can be called only on a running task", t.Status)
	}
	return t, nil
}

// TaskCalls returns the tool calls of a task of workspaceID, oldest first
// (a host showing the task: results and the cards it may answer); a task
// of another workspace is not found.
func (s *Service) TaskCalls(ctx context.Context, workspaceID, taskID string) ([]CallView, error) {
	if !models.IsID(taskID) {
		return nil, apperr.NotFoundf("task not found")
	}
	var t models.Task
	err := s.st.DB.WithContext(ctx).Select("id").Where("id = ? AND workspace_id = ?", taskID, workspaceID).Take(&t).Error
	if err := store.NotFound(err, "agentcall: find task", "task"); err != nil {
		return nil, err
	}
	return s.ListCalls(ctx, t.ID)
}

// ListCalls returns a task's tool calls, oldest first (the console's task
// page; the caller checked the task is the workspace's).
func (s *Service) ListCalls(ctx context.Context, taskID string) ([]CallView, error) {
	var rows []models.ToolCall
	if err := s.st.DB.WithContext(ctx).Where("task_id = ?", taskID).Order("created_at, id").Find(&rows).Error; err != nil {
		return nil, fmt.Errorf("agentcall: list tool calls: %w", err)
	}
	out := make([]CallView, 0, len(rows))
	for _, r := range rows {
		out = append(out, ViewOf(r))
	}
	return out, nil
}

// clip shortens s for a message.
func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}
