package models

import "time"

// AgentToolDeclaration is one tool an agent may call (seed 003): its
// provider-safe name, its input schema and the target a call runs. Its
// rules live in internal/agenttool.
type AgentToolDeclaration struct {
	ID          string `gorm:"primaryKey"`
	WorkspaceID string
	AgentID     string
	Name        string
	DisplayName string
	Description string
	Input       JSON
	Target      JSON
	CreatedAt   time.Time
	UpdatedAt   time.Time
}

// Tool call statuses.
const (
	ToolCallRunning      = "running"
	ToolCallCompleted    = "completed"
	ToolCallFailed       = "failed"
	ToolCallPendingInput = "pending_input" // parked on its card
	ToolCallClicking     = "clicking"      // one click is running a button's target
)

// ToolCall is one call of an agent tool, recorded with its step. A call
// whose reply was a pending-input card keeps the card here while its task
// waits; the click that resolves it records its result.
type ToolCall struct {
	ID             string `gorm:"primaryKey"`
	TaskID         string
	StepID         string
	AgentID        string
	DeclarationID  *string
	Name           string
	Input          JSON
	Status         string
	Result         JSON // agenttool.Reply once the call has a result
	Card           JSON // agenttool.PendingInput while or after it parked
	Producer       string
	Error          string
	ClickedButton  string
	ClickedBy      string
	ClickExpiresAt *time.Time
	CreatedAt      time.Time
	UpdatedAt      time.Time
}

// AgentAsset is an HTML file an agent uploaded for its app blocks (seed
// 004); its id is ast_ and a ULID, its bytes in storage under StorageKey.
type AgentAsset struct {
	ID          string `gorm:"primaryKey"`
	WorkspaceID string
	AgentID     string
	SHA256      string `gorm:"column:sha256"`
	Size        int64
	StorageKey  string
	CreatedAt   time.Time
}

// TaskReply is an agent's reply on a task: validated blocks, text and app.
type TaskReply struct {
	ID        string `gorm:"primaryKey"`
	TaskID    string
	AgentID   string
	Final     bool
	Blocks    JSON
	CreatedAt time.Time
}

// Step kind, await source and feed event types of agent tools and replies.
const (
	StepAgentTool       = "agent_tool"
	AwaitSourceToolCall = "tool_call"
	FeedToolCall        = "tool_call"
	FeedToolCallClick   = "tool_call_click"
	FeedReply           = "reply"
	// FeedUserMessage is a person's message to the agent from a task page.
	FeedUserMessage = "user_message"
)
