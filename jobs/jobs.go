// Package jobs defines appruntime's background job kinds: each job's
// arguments are a struct with a stable Kind, built into an asynq task with
// NewTask and read back with Decode. Payloads carry ids, not whole models.
package jobs

import (
	"encoding/json"
	"fmt"
	"time"

	gojson "github.com/goccy/go-json"
	"github.com/hibiken/asynq"
)

// Args is a job's arguments. Kind is stored in Redis: it never changes.
type Args interface {
	Kind() string
}

// Queue classes (docs/architecture.md#queues).
const (
	QueueLookup  = "lookup"
	QueueExtract = "extract"
	QueueScript  = "script"
	QueueEvents  = "events"
)

// Deadlines per queue class.
const (
	LookupDeadline  = 60 * time.Second
	ExtractDeadline = 9 * time.Minute
	ScriptDeadline  = 900 * time.Second
	EventsDeadline  = 2 * time.Minute
)

// Retention keeps a finished task's id in Redis so that re-enqueueing the same
// outbox row after a crash is refused as a duplicate instead of run twice.
const Retention = 7 * 24 * time.Hour

// Queues are the queue names in use. Tests give each test its own names so
// that tests sharing one Redis never take each other's jobs.
type Queues struct {
	Lookup, Extract, Script, Events string
}

// DefaultQueues are the production queue names.
func DefaultQueues() Queues {
	return Queues{Lookup: QueueLookup, Extract: QueueExtract, Script: QueueScript, Events: QueueEvents}
}

// Of returns the queue name of a queue class (QueueLookup, QueueExtract,
// QueueScript, QueueEvents); an unknown class is "".
func (q Queues) Of(class string) string {
	switch class {
	case QueueLookup:
		return q.Lookup
	case QueueExtract:
		return q.Extract
	case QueueScript:
		return q.Script
	case QueueEvents:
		return q.Events
	}
	return ""
}

// PrefixedQueues returns queue names prefixed with p.
func PrefixedQueues(p string) Queues {
	return Queues{Lookup: p + QueueLookup, Extract: p + QueueExtract, Script: p + QueueScript, Events: p + QueueEvents}
}

// NewTask builds an asynq task of args' kind with a JSON payload.
func NewTask(args Args, opts ...asynq.Option) (*asynq.Task, error) {
	return NewTaskWithHeaders(args, nil, opts...)
}

// NewTaskWithHeaders is NewTask with task headers: metadata that travels with
// the job but is not its arguments, such as the id of the request that caused
// it (internal/requestid).
func NewTaskWithHeaders(args Args, headers map[string]string, opts ...asynq.Option) (*asynq.Task, error) {
	payload, err := json.Marshal(args)
	if err != nil {
		return nil, fmt.Errorf("jobs: marshal %s: %w", args.Kind(), err)
	}
	return asynq.NewTaskWithHeaders(args.Kind(), payload, headers, opts...), nil
}

// Decode reads a task's payload as T. A malformed payload can never succeed,
// so the error is marked to skip retries.
//
// Payloads are what NewTask marshalled, read once per job: goccy/go-json
// reads them in about a third of encoding/json's time (which validates the
// whole payload before decoding it, /run's input included). A payload it
// refuses is decided, and its error worded, by encoding/json.
func Decode[T Args](t *asynq.Task) (T, error) {
	var args T
	if gojson.Unmarshal(t.Payload(), &args) == nil {
		return args, nil
	}
	args = *new(T)
	if err := json.Unmarshal(t.Payload(), &args); err != nil {
		return args, fmt.Errorf("jobs: decode %s: %v: %w", t.Type(), err, asynq.SkipRetry)
	}
	return args, nil
}

// ResumeEvent delivers a released await's resume event: the task runs again,
// the feed records it and the agent is told. OutboxID is the idempotency key.
type ResumeEvent struct {
	OutboxID string `json:"outbox_id"`
}

// Kind implements Args.
func (ResumeEvent) Kind() string { return "resume_event" }

// WebhookDelivery posts one event to an agent's resume webhook, retried with backoff.
type WebhookDelivery struct {
	EventID string `json:"event_id"` // the outbox id of the resume event
}

// Kind implements Args.
func (WebhookDelivery) Kind() string { return "webhook_delivery" }

// RunProducer runs an artifact step's producer on the script queue, with
// retries (ProducerRetries); the outbox row carries its ProducerJob.
type RunProducer struct {
	OutboxID string `json:"outbox_id"`
}

// Kind implements Args.
func (RunProducer) Kind() string { return "run_producer" }

// ProducerJob is one producer run: the python configured tool that seeds an
// artifact step's rows while the step is being built (status running). It
// is the payload of the outbox row a RunProducer names, written when the
// step is created and read by a worker maybe after a deploy: its JSON never
// changes without a migration note (docs/contracts.md#outbox-kinds).
type ProducerJob struct {
	WorkspaceID    string          `json:"workspace_id"`
	TaskID         string          `json:"task_id"`
	AgentID        string          `json:"agent_id"`
	StepID         string          `json:"step_id"` // the artifact step
	ProducerToolID string          `json:"producer_tool_id"`
	Params         json.RawMessage `json:"params"` // the step's params: the producer's input
}

// ProducerRetries is how often a failed producer is retried before its
// step fails.
const ProducerRetries = 3

// Summary runs the key-detail summary pass of a parked artifact step.
type Summary struct {
	OutboxID string `json:"outbox_id"`
}

// Kind implements Args.
func (Summary) Kind() string { return "summary" }

// RunTool runs one /run of a tool on the worker fleet and records it. The
// API enqueues it through internal/jobwait (its own task id, an absolute
// deadline, no retries) and waits for its outcome. Input is the bundle's
// input already filtered to the binding's params plus the session's ids.
type RunTool struct {
	TaskID      string `json:"task_id"`
	StepID      string `json:"step_id"` // the artifact step: the surface
	AgentID     string `json:"agent_id"`
	WorkspaceID string `json:"workspace_id"`
	// ConfiguredToolID is empty when the base tool is named directly.
	ConfiguredToolID string          `json:"configured_tool_id,omitempty"`
	BaseTool         string          `json:"base_tool"`
	Op               string          `json:"op"`
	Input            json.RawMessage `json:"input"`
	// Record leaves a step and a feed card; false leaves no card, and no
	// step unless the run billed something.
	Record bool `json:"record"`
	// Actor is who ran it, as the feed names them (user:… or session:…).
	Actor string `json:"actor"`
}

// Kind implements Args.
func (RunTool) Kind() string { return "run_tool" }

// AwaitExpiry releases an await its configured tool's await_expiry_seconds
// let run out, with reason "expired". Relayed from the outbox row OutboxID
// (written with the await) and scheduled for the row's due time.
type AwaitExpiry struct {
	OutboxID string `json:"outbox_id"`
}

// Kind implements Args.
func (AwaitExpiry) Kind() string { return "await_expiry" }

// ClaimExpiry was scheduled by earlier apis for each review claim, at its
// expiry; the worker's sweep clears expired claims now
// (claim.Queue.ClearExpired). A worker still runs the jobs an older api
// queued, as one ClearExpired: the fields are no longer read.
type ClaimExpiry struct {
	TaskID    string    `json:"task_id"`
	ExpiresAt time.Time `json:"expires_at"`
}

// Kind implements Args.
func (ClaimExpiry) Kind() string { return "claim_expiry" }

// Owed is a job the platform owes according to Postgres, which the
// worker's sweep enqueues again in case Redis lost it: Opts carry the
// job's own task id, so an enqueue of a job Redis still holds is refused.
type Owed struct {
	ID   string // the task id, for logs
	Due  time.Time
	Task *asynq.Task
	Opts []asynq.Option
}

// OCRFile OCRs the pages of a task file that have no text layer (a scan,
// an image) once it is uploaded, so that file_preview, the viewer and
// extraction find its text read already. Relayed from the outbox row
// OutboxID, written with the file's row; its OCRJob is the row's payload.
type OCRFile struct {
	OutboxID string `json:"outbox_id"`
}

// Kind implements Args.
func (OCRFile) Kind() string { return "ocr_file" }

// OCRJob is the payload of an ocr_file outbox row: the file to OCR. Its
// JSON never changes without a migration note (docs/contracts.md#outbox-kinds).
type OCRJob struct {
	TaskID string `json:"task_id"`
	FileID string `json:"file_id"`
}

// OCRRetries is how often an OCR pass that could not finish (its
// workspace's page readers busy, a deadline) is tried again; the pages it
// read are kept, so each try goes on where the last stopped. Past the
// last, pages are read when first asked for.
const OCRRetries = 8
