package jobs

// AgentToolCall runs the target of an agent tool call, or of the button of
// its pending-input card, on the lookup queue. The API enqueues it through
// internal/jobwait (its own task id, an absolute deadline, no retries),
// waits for the target's reply and records it.
type AgentToolCall struct {
	ToolCallID string `json:"tool_call_id"`
	// ButtonID is the card's button whose target runs; empty for the
	// tool's own target.
	ButtonID string `json:"button_id,omitempty"`
	// UserID is the person who pressed the button (the identity token
	// names them); empty for the agent's own call.
	UserID string `json:"user_id,omitempty"`
}

// Kind implements Args.
func (AgentToolCall) Kind() string { return "agent_tool_call" }
