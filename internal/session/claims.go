// Package session mints and verifies the 15-minute session tokens that
// bundles present to the runtime API: HS256 JWTs signed with a key ring
// (kid) for rotation, parsed strictly, and revocable by session id.
package session

import "time"

// Claims is what a verified session token says. The runtime trusts these,
// never the request body, for which task, step, binding and tool a call is on.
type Claims struct {
	SessionID        string // jti; the app_sessions row id
	WorkspaceID      string
	TaskID           string
	AgentID          string
	StepID           string
	ConfiguredToolID string
	BindingID        string
	UserID           string // the reviewer the host minted for; may be empty
	ExpiresAt        time.Time
	// Kind is KindTask, or KindPreview for an admin's preview of a bundle
	// version against a binding: on no task (TaskID, AgentID, StepID and
	// ConfiguredToolID empty) and read-only
	// (docs/architecture.md#preview-sessions).
	Kind string
}

// The kinds of session.
const (
	KindTask    = "task"
	KindPreview = "preview"
)

// Preview reports whether the session is a preview session.
func (c Claims) Preview() bool { return c.Kind == KindPreview }

// Surface is the rate-limit surface of the session: its artifact step. Every
// session minted for one step shares it (docs/architecture.md#runtime-contract);
// a preview session, on no step, is its own surface.
func (c Claims) Surface() string {
	if c.Preview() {
		return "preview:" + c.SessionID
	}
	return c.StepID
}

// Values are the session placeholders a binding template may use; they always
// win over request values of the same name.
func (c Claims) Values() map[string]string {
	return map[string]string{
		"task_id":      c.TaskID,
		"agent_id":     c.AgentID,
		"step_id":      c.StepID,
		"workspace_id": c.WorkspaceID,
	}
}
