package bindingspec

import (
	"encoding/json"
	"strings"
)

// Kinds of binding: where reads and writes go.
const (
	KindPostgres = "postgres" // reads/writes through a data source (a pgx pool per integration DSN)
	KindREST     = "rest"     // reads/writes through the gateway
)

// Spec is a binding's allowed_operations document: everything a bundle bound
// to it may do. A bundle only ever names an op (or an action's name, or a
// capability); the spec decides the table, the URL, the tool.
type Spec struct {
	Reads     []Read     `json:"reads,omitempty"`
	Writes    []Write    `json:"writes,omitempty"`
	Actions   []Action   `json:"actions,omitempty"`
	HTTPCalls []HTTPCall `json:"http_calls,omitempty"`
	Tools     []Tool     `json:"tools,omitempty"`
	// Capabilities, when present, grants the named capabilities on top of the
	// grandfathered ones; nil (absent) grants only the grandfathered ones.
	Capabilities []string `json:"capabilities,omitempty"`
}

// Read is a `reads` op: one table, the columns a bundle may select, the
// columns it may filter on, the order and a row limit per page.
type Read struct {
	Op         string   `json:"op"`
	Table      string   `json:"table"`
	Columns    []string `json:"columns"`              // selectable; a request may ask for a subset
	Filterable []string `json:"filterable,omitempty"` // columns a request may filter on
	OrderBy    []Order  `json:"order_by,omitempty"`
	Limit      int      `json:"limit,omitempty"` // rows per page; 0: DefaultReadLimit
	// FixedFilters are always applied and cannot be changed by a request:
	// column → value, where a value may be a session placeholder such as
	// "{{task_id}}" (task_id, agent_id, step_id, workspace_id).
	FixedFilters map[string]any `json:"fixed_filters,omitempty"`
	// Request is how a rest binding's read reaches its data (nil, and
	// refused, on a postgres binding).
	Request *Request `json:"request,omitempty"`
}

// Order is one ORDER BY term.
type Order struct {
	Column string `json:"column"`
	Desc   bool   `json:"desc,omitempty"`
}

// Write modes.
const (
	ModeInsert = "insert"
	ModeUpdate = "update"
	ModeUpsert = "upsert"
)

// Write is a `writes` op: one row per call into one table.
type Write struct {
	Op         string   `json:"op"`
	Table      string   `json:"table"`
	Mode       string   `json:"mode"`                  // insert | update | upsert
	KeyColumns []string `json:"key_columns,omitempty"` // required for update and upsert
	Columns    []string `json:"columns"`               // writable columns a request may set
	// FixedValues are always written and cannot be set by a request: column →
	// value, where a value may be a session placeholder ("{{task_id}}").
	FixedValues map[string]any `json:"fixed_values,omitempty"`
	// Request is how a rest binding's write reaches its data (nil, and
	// refused, on a postgres binding).
	Request *Request `json:"request,omitempty"`
}

// Request is a rest binding's read or write: a request against the base_url
// of the binding's integration, declared with the templates of http_calls
// (seed 000, "http_calls templates"). Its auth reads its secrets from that
// same integration.
type Request struct {
	Method string `json:"method"`
	// Path is appended to the integration's base_url; it starts with "/" and
	// may hold placeholders in its path and query, as an http_call's url.
	Path                 string            `json:"path"`
	Auth                 *Auth             `json:"auth,omitempty"`
	Headers              map[string]string `json:"headers,omitempty"`
	Query                map[string]string `json:"query,omitempty"`
	BodyTemplate         json.RawMessage   `json:"body_template,omitempty"`
	PruneEmptyBodyFields bool              `json:"prune_empty_body_fields,omitempty"`
}

// Call is r as the http_call the gateway runs for op: its path appended to
// baseURL (the binding's integration's), that integration's credentials.
func (r *Request) Call(op, baseURL, integrationID string) *HTTPCall {
	return &HTTPCall{
		Op: op, Method: r.Method, URL: strings.TrimRight(baseURL, "/") + r.Path, IntegrationID: integrationID,
		Auth: r.Auth, Headers: r.Headers, Query: r.Query, BodyTemplate: r.BodyTemplate, PruneEmptyBodyFields: r.PruneEmptyBodyFields,
	}
}

// Action is a named bundle of writes and http_calls run as one unit
// (docs/architecture.md#2-action-atomicity). Action names are their own namespace.
type Action struct {
	Name          string   `json:"name"`
	Writes        []string `json:"writes,omitempty"`     // names of `writes` ops, run in order in one transaction
	HTTPCalls     []string `json:"http_calls,omitempty"` // names of `http_calls` ops, run after the writes
	FeedEvent     string   `json:"feed_event,omitempty"` // name of the feed event recorded on success; default the action's name
	ResolvesAwait bool     `json:"resolves_await,omitempty"`
	// Outcome is what resolving the await with this action decides:
	// approve, edit, reject or a custom label (a lowercase name). The
	// task.resumed event carries it as decision.outcome
	// (docs/agent-platforms.md#webhook-event-catalogue). Only on an action
	// that resolves the await.
	Outcome string `json:"outcome,omitempty"`
	// ReasonRequired makes the runtime refuse the action without a
	// reviewer's reason (payload "reason", at most MaxReasonLength
	// characters). Only on an action that resolves the await.
	ReasonRequired bool `json:"reason_required,omitempty"`
}

// Outcomes an action may declare besides a custom label.
const (
	OutcomeApprove = "approve"
	OutcomeEdit    = "edit"
	OutcomeReject  = "reject"
)

// MaxReasonLength bounds a reviewer's reason, in characters.
const MaxReasonLength = 2000

// HTTPCall is an `http_calls` op: an outbound request template (seed 000,
// "http_calls templates"), run by the gateway.
type HTTPCall struct {
	Op                   string            `json:"op"`
	Method               string            `json:"method"`
	URL                  string            `json:"url"`
	IntegrationID        string            `json:"integration_id,omitempty"`
	Auth                 *Auth             `json:"auth,omitempty"`
	Headers              map[string]string `json:"headers,omitempty"`
	Query                map[string]string `json:"query,omitempty"`
	BodyTemplate         json.RawMessage   `json:"body_template,omitempty"`
	PruneEmptyBodyFields bool              `json:"prune_empty_body_fields,omitempty"`
}

// Auth kinds of an http_call.
const (
	AuthNone              = "none"
	AuthBearer            = "bearer"
	AuthOAuth2Password    = "oauth2_password"
	AuthClientCredentials = "client_credentials"
)

// Auth says how an http_call authenticates; secrets come from the integration.
type Auth struct {
	Kind     string `json:"kind"`
	TokenURL string `json:"token_url,omitempty"`
	Scope    string `json:"scope,omitempty"`
}

// Tool is a `tools` op: a configured tool (by display name) or a base tool with
// nothing to configure, and the input keys a bundle may supply.
type Tool struct {
	Op     string   `json:"op"`
	Tool   string   `json:"tool"`
	Params []string `json:"params,omitempty"`
	// Record, when false, leaves no feed card (and no step for unbilled lookups).
	Record *bool `json:"record,omitempty"`
}

// Records reports whether a run of this op records a step and a feed card.
func (t Tool) Records() bool { return t.Record == nil || *t.Record }

// DefaultReadLimit is the page size of a read op that declares none; MaxReadLimit bounds any.
const (
	DefaultReadLimit = 100
	MaxReadLimit     = 1000
)
