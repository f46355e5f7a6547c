package webhook

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"
)

// The webhook event catalogue: every type a delivery may carry, each with a
// documented payload (docs/agent-platforms.md#webhook-event-catalogue). A
// type is stable: it is the Standard Webhooks `type` receivers switch on.
const (
	// TaskResumed: a reviewer's action resolved the task's await; the task
	// runs again. Carries Decision.
	TaskResumed = "task.resumed"
	// TaskReleased: an admin released the parked task; it runs again.
	// Carries the admin's Note.
	TaskReleased = "task.released"
	// TaskExpired: the await's expiry released the parked task; it runs
	// again.
	TaskExpired = "task.expired"
	// TaskAborted: an admin aborted the parked task; it failed and does not
	// resume. Carries the admin's Note.
	TaskAborted = "task.aborted"
	// ToolCallCompleted: a tool call finished with a result, or a pending
	// input card was posted (Data.status says which).
	ToolCallCompleted = "tool_call.completed"
	// ToolCallFailed: a tool call failed; Data.error says why.
	ToolCallFailed = "tool_call.failed"
	// InputAnswered: a person answered a pending-input card (clicked one of
	// its buttons).
	InputAnswered = "input.answered"
	// MessageSent: a reviewer sent the agent a message ("Send to agent").
	MessageSent = "message.sent"
	// ReplyStored: a reply of the agent's was stored on the task.
	ReplyStored = "reply.stored"
	// OutcomeUnknown: a write or an action may or may not have committed on
	// the data source (its answer was lost); someone should check.
	OutcomeUnknown = "outcome.unknown"
)

// EventType is one entry of the catalogue.
type EventType struct {
	Name        string
	Description string
}

// Catalogue is every event type, in the order the docs list them.
var Catalogue = []EventType{
	{TaskResumed, "a reviewer's action resolved the await; the task runs again (carries decision)"},
	{TaskReleased, "an admin released the parked task (carries the admin's note)"},
	{TaskExpired, "the await expired and released the task"},
	{TaskAborted, "an admin aborted the parked task (carries the admin's note); it does not resume"},
	{ToolCallCompleted, "a tool call finished (a result, or a pending-input card posted)"},
	{ToolCallFailed, "a tool call failed"},
	{InputAnswered, "a person answered a pending-input card"},
	{MessageSent, "a reviewer sent the agent a message"},
	{ReplyStored, "a reply of the agent's was stored"},
	{OutcomeUnknown, "a write or action whose outcome is unknown"},
}

// EventTypeNames returns the catalogue's type names.
func EventTypeNames() []string {
	names := make([]string, len(Catalogue))
	for i, t := range Catalogue {
		names[i] = t.Name
	}
	return names
}

// IsEventType reports whether name is a type of the catalogue.
func IsEventType(name string) bool {
	return slices.ContainsFunc(Catalogue, func(t EventType) bool { return t.Name == name })
}

// ResumesTask reports whether an event of type name puts its task back to
// running (task.resumed, task.released, task.expired).
func ResumesTask(name string) bool {
	return name == TaskResumed || name == TaskReleased || name == TaskExpired
}

// ValidateEventTypes checks an agent's subscription: every name must be a
// catalogue type, named once. The error names the first unknown type.
func ValidateEventTypes(names []string) error {
	for i, n := range names {
		if !IsEventType(n) {
			return fmt.Errorf("webhook_events: unknown event type %q (known: %s)", n, strings.Join(EventTypeNames(), ", "))
		}
		if slices.Contains(names[:i], n) {
			return fmt.Errorf("webhook_events: %q is named twice", n)
		}
	}
	return nil
}

// Subscribed reports whether an agent whose subscription is subscription
// (nil: every type) receives events of type name.
func Subscribed(subscription []string, name string) bool {
	return subscription == nil || slices.Contains(subscription, name)
}

// Event is an event as it leaves appruntime: the webhook body (and the
// payload of the feed's task_resumed record for the resuming types). ID is
// the outbox row's id, the event's idempotency key for receivers (the
// webhook-id header). Fields every type carries: type, task_id, agent_id,
// workspace_id, step_id, resolved_by (who caused the event) and resolved_at
// (when). The review types also carry await_id and reason; the others carry
// name (the feed event's name, e.g. the tool) and data (the feed event's
// payload, as the events feed shows it).
type Event struct {
	ID string `json:"id,omitempty"`
	// Type is one of the catalogue.
	Type        string    `json:"type"`
	TaskID      string    `json:"task_id"`
	AgentID     string    `json:"agent_id"`
	WorkspaceID string    `json:"workspace_id"`
	StepID      string    `json:"step_id"`
	AwaitID     string    `json:"await_id"`
	ResolvedBy  string    `json:"resolved_by"`
	ResolvedAt  time.Time `json:"resolved_at"`
	// Reason is why a review event happened: "action", "admin_release",
	// "expired", "admin_abort"; empty on the other types.
	Reason string `json:"reason"`
	// Action is the action that released the await (task.resumed).
	Action string `json:"action,omitempty"`
	// Note is the admin's reason of a release or an abort.
	Note string `json:"note,omitempty"`
	// Decision is what a reviewer's action decided (task.resumed).
	Decision *Decision `json:"decision,omitempty"`
	// Name and Data are the feed event's name and payload (the types
	// pushed from the events feed).
	Name string          `json:"name,omitempty"`
	Data json.RawMessage `json:"data,omitempty"`
}

// Decision is the structured outcome of a review (task.resumed's decision):
// the resolving action's declared outcome (approve, edit, reject or a custom
// label; empty when it declares none), the reviewer's reason, who decided
// and when, and the rows the action wrote, with their ops.
type Decision struct {
	Outcome   string    `json:"outcome"`
	Reason    string    `json:"reason"`
	DecidedBy string    `json:"decided_by"`
	DecidedAt time.Time `json:"decided_at"`
	Writes    []Write   `json:"writes"`
}

// Write is one write of a resolving action: its op (insert, update,
// upsert), the table written, and the row as written (the binding's fixed
// values included).
type Write struct {
	// Name is the binding's write op.
	Name string `json:"name"`
	// Op is how it wrote: insert, update or upsert.
	Op    string          `json:"op"`
	Table string          `json:"table,omitempty"`
	Row   json.RawMessage `json:"row,omitempty"`
	// RowsAffected is what the data source answered.
	RowsAffected int64 `json:"rows_affected"`
}
