package runtime

import (
	"context"
	"encoding/json"
	"time"

	"github.com/appruntime/appruntime/internal/apperr"
	"github.com/appruntime/appruntime/internal/binding"
	"github.com/appruntime/appruntime/internal/bindingspec"
	"github.com/appruntime/appruntime/internal/datasource"
	"github.com/appruntime/appruntime/internal/gateway"
	"github.com/appruntime/appruntime/internal/integration"
	"github.com/appruntime/appruntime/internal/intent"
	"github.com/appruntime/appruntime/internal/limit"
	"github.com/appruntime/appruntime/internal/served"
	"github.com/appruntime/appruntime/internal/session"
	"github.com/appruntime/appruntime/internal/store"
	"github.com/appruntime/appruntime/jobs"
	"github.com/appruntime/appruntime/models"
)

// Gateway runs a binding's http_calls (the outbound HTTP gateway,
// internal/gateway). A deployment without one answers 501 for every http_call.
type Gateway interface {
	// Call renders call with in's values (the session's task_id, agent_id,
	// step_id and workspace_id from in.Session only) and sends it. An upstream
	// that answers at all, whatever its status, is a Response; only a
	// pre-flight failure (URL blocked, token acquisition, transport) is an error.
	Call(ctx context.Context, call *bindingspec.HTTPCall, in CallInput) (Response, error)
}

// CallInput is what a Gateway needs besides the template (gateway.CallInput).
type CallInput = gateway.CallInput

// Response is an upstream's reply: its status and its JSON body, or its text
// when the body is not JSON (gateway.Response).
type Response = gateway.Response

// Capabilities serves the platform features of /capability on a task
// (capability.Service).
type Capabilities interface {
	// Call runs capability name for a session of taskID with its payload.
	Call(ctx context.Context, taskID, name string, payload json.RawMessage) (any, error)
}

// Service runs the verbs. Build one per process (internal/platform).
type Service struct {
	Store    *store.Store
	Bindings *binding.Service
	// Integrations reads the integrations bindings name (their DSN and
	// secrets) from the process's one cache, which a change evicts on every
	// replica (integration.Lookup).
	Integrations *integration.Lookup
	Sources      *datasource.Registry
	Limiter      *limit.Limiter
	Bulkhead     *limit.Bulkhead
	// RunBulkhead bounds the /run calls this process waits on at once
	// (503 past it); required when Jobs is set.
	RunBulkhead *limit.Bulkhead
	// Gateway runs http_calls; nil answers 501.
	Gateway Gateway
	// Served is what this deployment serves (capabilities, base tools),
	// computed once at start; nil serves nothing, and /capability and /run
	// answer 501 (docs/architecture.md#what-this-deployment-serves).
	Served *served.Set
	// Capabilities serves /capability on the session's own task
	// (internal/capability); nil answers 501.
	Capabilities Capabilities
	// Journal records the write intents and feed rows of /write and
	// /action (group-committed); required for both verbs.
	Journal *intent.Journal
	// AfterRelease runs after a commit that released an await (it wakes the
	// outbox relay); nil skips it.
	AfterRelease func(ctx context.Context)
	// CursorKey signs read cursors (NewCursorKey).
	CursorKey []byte
	// Jobs runs /run's jobs on the worker fleet; nil answers 501.
	Jobs RunJobs
	// Queues names the queues /run's jobs go to.
	Queues jobs.Queues
	// ExtractionSlots admits at most two structured_data_extraction runs
	// per surface; required when Jobs is set.
	ExtractionSlots *limit.Semaphore
	// RunDeadlineFunc, when set, replaces a base tool's deadline (tests
	// shorten it); nil keeps the queue's (basetool.RunsOn).
	RunDeadlineFunc func(baseTool string) time.Duration
}

// binding loads the session's binding and checks it is of the session's workspace.
func (s *Service) binding(ctx context.Context, c session.Claims) (*binding.Loaded, error) {
	b, err := s.Bindings.Lookup(ctx, c.BindingID)
	if apperr.Is(err, apperr.NotFound) {
		return nil, apperr.Forbiddenf("the session's binding no longer exists")
	}
	if err != nil {
		return nil, err
	}
	if b.WorkspaceID != c.WorkspaceID {
		return nil, apperr.Forbiddenf("the binding is not in the session's workspace")
	}
	return b, nil
}

// source returns the data source of a postgres binding.
func (s *Service) source(ctx context.Context, b *binding.Loaded) (datasource.Source, error) {
	src, _, err := s.sourceAndKind(ctx, b)
	return src, err
}

// integration returns the integration row (integration.Lookup). An
// integration outside the workspace is 403 (seed 000).
func (s *Service) integration(ctx context.Context, workspaceID, id string) (models.Integration, error) {
	row, err := s.Integrations.Integration(ctx, id)
	if apperr.Is(err, apperr.NotFound) {
		return row, apperr.Forbiddenf("the binding's integration no longer exists")
	}
	if err != nil {
		return row, err
	}
	return checkWorkspace(row, workspaceID)
}

func checkWorkspace(row models.Integration, workspaceID string) (models.Integration, error) {
	if row.WorkspaceID != workspaceID {
		return models.Integration{}, apperr.Forbiddenf("integration %q is not in the session's workspace", row.Name)
	}
	return row, nil
}

// actor names who acted in feed rows: the reviewer when the host said, else the session.
func actor(c session.Claims) string {
	if c.UserID != "" {
		return "user:" + c.UserID
	}
	return "session:" + c.SessionID
}

// feedRow is one feed row on the session's step.
func feedRow(c session.Claims, typ, name string, payload any) models.FeedEvent {
	step := c.StepID
	return models.FeedEvent{TaskID: c.TaskID, StepID: &step, Type: typ, Name: name,
		Payload: models.MustJSON(payload), Actor: actor(c)}
}
