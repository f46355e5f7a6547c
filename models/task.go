package models

import "time"

// Task statuses.
const (
	TaskRunning         = "running"
	TaskWaitingForInput = "waiting_for_input"
	TaskCompleted       = "completed"
	TaskFailed          = "failed"
)

// Task is one run of an agent; it can park (waiting_for_input) on an await.
type Task struct {
	ID             string `gorm:"primaryKey"`
	WorkspaceID    string
	AgentID        string
	Title          string
	Status         string
	Priority       float64
	ClaimedBy      *string
	ClaimExpiresAt *time.Time
	AssignedTo     *string
	CreatedAt      time.Time
	UpdatedAt      time.Time
}

// Step kinds and statuses.
const (
	StepAppTool    = "app_tool"
	StepToolRun    = "tool_run"
	StepAppToolRun = "app_tool_run"

	StepRunning   = "running"
	StepCompleted = "completed"
	StepFailed    = "failed"
)

// Step is one tool call within a task; an app-tool step's output is the artifact.
type Step struct {
	ID               string `gorm:"primaryKey"`
	TaskID           string
	ParentStepID     *string
	Kind             string
	ConfiguredToolID *string
	Status           string
	Input            JSON
	Output           JSON
	Error            string
	CreatedAt        time.Time
	UpdatedAt        time.Time
}

// Await statuses and sources.
const (
	AwaitPending  = "pending"
	AwaitResolved = "resolved"
	AwaitAborted  = "aborted"

	AwaitSourceAppTool = "app_tool"
)

// TaskAwait holds a task parked until something releases it exactly once.
type TaskAwait struct {
	ID             string `gorm:"primaryKey"`
	TaskID         string
	SourceType     string
	CorrelationKey string
	Status         string
	Reason         string
	CreatedAt      time.Time
	ResolvedAt     *time.Time
	ResolvedBy     string
}

// FeedEvent is one card of a task's feed. ID is a sequence, so it orders the
// feed and serves as the cursor of the events endpoint.
type FeedEvent struct {
	ID        int64 `gorm:"primaryKey;autoIncrement"`
	TaskID    string
	StepID    *string
	Type      string
	Name      string
	Payload   JSON
	Actor     string
	DedupeKey *string // set by idempotent writers (resume handler: the outbox id)
	// IntentID is the write intent this row records (an agent_action or
	// agent_action_unknown row of a /write or an action): the row is how a
	// sweep knows the intent's outcome was recorded.
	IntentID  *string
	CreatedAt time.Time
}

// Feed event types.
const (
	FeedAgentAction   = "agent_action"
	FeedAwaitResolved = "await_resolved"
	FeedAwaitAborted  = "await_aborted"
	FeedTaskResumed   = "task_resumed"
	FeedArtifact      = "artifact"
	// FeedAgentActionUnknown records a write or action cut off by a crash
	// between its data-source commit and its feed row: whether the data
	// source committed it is not known (docs/architecture.md#the-write-guarantee).
	FeedAgentActionUnknown = "agent_action_unknown"
)

// AgentKeyValue is one key detail of a task, filled by the summary pass.
type AgentKeyValue struct {
	ID        string `gorm:"primaryKey"`
	TaskID    string
	AgentID   string
	Key       string
	Value     JSON
	CreatedAt time.Time
	UpdatedAt time.Time
}

// File is a document attached to a task.
type File struct {
	ID          string `gorm:"primaryKey"`
	TaskID      string
	Name        string
	ContentType string
	Pages       int
	Size        int64
	StorageKey  string
	CreatedAt   time.Time
}

// Translation is the cached translation of one page of a file.
type Translation struct {
	ID             string `gorm:"primaryKey"`
	FileID         string
	Page           int
	TargetLanguage string
	Granularity    string
	Content        JSON
	CreatedAt      time.Time
}

// UsageRecord is what a tool run billed.
type UsageRecord struct {
	ID        string `gorm:"primaryKey"`
	TaskID    string
	StepID    string
	Tool      string
	Units     float64
	Rate      float64
	CreatedAt time.Time
}

// AppSession is one minted session token (its id is the JWT's jti). A
// preview session (Kind SessionPreview) is on no task: its TaskID and StepID
// are empty (NULL) and BindingID names the binding it reads through
// (docs/architecture.md#preview-sessions).
type AppSession struct {
	ID          string `gorm:"primaryKey"`
	WorkspaceID string
	Kind        string `gorm:"default:task"`
	TaskID      string
	StepID      string
	BindingID   *string
	UserID      *string
	TokenID     *string // the host token the session was minted with, if any
	ExpiresAt   time.Time
	RevokedAt   *time.Time
	CreatedAt   time.Time
}

// The kinds of an app session.
const (
	SessionTask    = "task"
	SessionPreview = "preview"
)

// WriteIntent is a data-source write (a /write or an /action's writes) that
// may be about to commit: it is committed before the data source commits, as
// one of the intents of a WriteIntentBatch, and its feed row names it after,
// so a crash in between leaves it behind to be recorded as an outcome-unknown
// feed row. Owner is the process doing the write. Its table, write_intents,
// holds the intents of processes from before intent batches (one row an
// intent), which only a sweep still reads.
type WriteIntent struct {
	ID        string `gorm:"primaryKey"`
	Owner     string
	TaskID    string
	StepID    string
	Name      string // the feed row's name
	Actor     string
	Payload   JSON // what was to be written
	CreatedAt time.Time
	// BatchID is the WriteIntentBatch the intent was opened in.
	BatchID string `gorm:"-"`
}

// WriteIntentBatch is the write intents a process opened together, one row
// for them all: its records (a JSON array of each intent's id, task, step,
// name, actor and payload) are committed before any of their writes may
// commit, and the row is deleted once every one of them has its feed row or
// was dropped (its write did not commit). FeedAfter is the feed's last id
// when the batch was opened: its intents' feed rows come after it.
type WriteIntentBatch struct {
	ID        string `gorm:"primaryKey"`
	Owner     string
	CreatedAt time.Time
	FeedAfter int64
	Intents   string
}

// ProducerSeed journals the data-source transaction that seeds an artifact
// step's rows (runtime.Service.Seed). It commits before that transaction
// does, so a producer retried after a crash asks the data source whether
// its rows are there instead of writing them twice. Deleted when the step
// settles.
type ProducerSeed struct {
	StepID    string `gorm:"primaryKey"`
	SourceTx  string // datasource.Tx.ID
	Rows      int64  // rows the transaction wrote
	CreatedAt time.Time
}

// Outbox is something that must happen because a transaction committed; the
// relay moves it to a queue with ID as the task id.
type Outbox struct {
	ID        string `gorm:"primaryKey"`
	Kind      string
	Payload   JSON
	CreatedAt time.Time
	SentAt    *time.Time
	// DueAt is when the row's job is due; nil is at once.
	DueAt *time.Time
	// DoneAt is when the row's job finished for good (done, refused, or
	// out of retries); a row sent but not done is still owed, and the
	// worker's sweep enqueues it again when Redis lost its job.
	DoneAt *time.Time
	// RequestID is the id of the request that wrote the row, when there was
	// one: the relay's job carries it.
	RequestID *string
	// Traceparent is the W3C trace context of the span that wrote the row,
	// with tracing on: the relay's job continues that trace.
	Traceparent *string
}

// TableName keeps the table name of the data model.
func (Outbox) TableName() string { return "outbox" }

// WebhookDelivery records one attempt to deliver an event to an agent's webhook.
type WebhookDelivery struct {
	ID      string `gorm:"primaryKey"`
	EventID string
	// EventType is the type of the event the attempt carried
	// (docs/agent-platforms.md#webhook-event-catalogue).
	EventType  string
	AgentID    string
	TaskID     string
	URL        string
	Attempt    int
	StatusCode int
	Error      string
	DurationMS int64
	CreatedAt  time.Time
	// FinishedAt is when the attempt's outcome was recorded; nil for an
	// attempt recorded before sending whose worker stopped before it knew.
	FinishedAt *time.Time
	// NextAttemptAt is when the next attempt is due after this one failed;
	// nil after a success or the last attempt.
	NextAttemptAt *time.Time
}
