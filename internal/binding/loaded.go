package binding

import (
	"time"

	"github.com/appruntime/appruntime/internal/bindingspec"
)

// Binding is a saved binding as an admin sees it.
type Binding struct {
	ID                string           `json:"id"`
	WorkspaceID       string           `json:"-"`
	Name              string           `json:"name"`
	BindingKind       string           `json:"binding_kind"`
	IntegrationID     *string          `json:"integration_id"`
	AllowedOperations bindingspec.Spec `json:"allowed_operations"`
	Version           int              `json:"version"`
	CreatedAt         time.Time        `json:"created_at"`
	UpdatedAt         time.Time        `json:"updated_at"`
}

// Version is one entry of a binding's history: its full content as saved,
// who saved it, when, and what changed against the version before.
type Version struct {
	Version           int                  `json:"version"`
	Name              string               `json:"name"`
	BindingKind       string               `json:"binding_kind"`
	IntegrationID     *string              `json:"integration_id"`
	AllowedOperations bindingspec.Spec     `json:"allowed_operations"`
	Diff              []bindingspec.Change `json:"diff"`
	SavedBy           string               `json:"saved_by"`
	RestoredFrom      *int                 `json:"restored_from,omitempty"`
	CreatedAt         time.Time            `json:"created_at"`
}

// Loaded is a binding indexed for the runtime's hot path: every lookup by op
// is a map access. A Loaded is shared by every caller and never changes;
// callers must not modify it or anything it returns.
type Loaded struct {
	ID            string
	WorkspaceID   string
	Name          string
	Kind          string // KindPostgres or KindREST
	IntegrationID string // the data source; "" when the binding names none
	Version       int
	Spec          bindingspec.Spec

	reads        map[string]*bindingspec.Read
	writes       map[string]*bindingspec.Write
	actions      map[string]*bindingspec.Action
	httpCalls    map[string]*bindingspec.HTTPCall
	tools        map[string]*bindingspec.Tool
	capabilities []string
	granted      map[string]bool
}

// NewLoaded indexes b. Lookup builds one per load; tests of the runtime can
// build one without a database.
func NewLoaded(b Binding) *Loaded {
	s := b.AllowedOperations
	l := &Loaded{
		ID: b.ID, WorkspaceID: b.WorkspaceID, Name: b.Name, Kind: b.BindingKind,
		Version: b.Version, Spec: s,
		reads:     make(map[string]*bindingspec.Read, len(s.Reads)),
		writes:    make(map[string]*bindingspec.Write, len(s.Writes)),
		actions:   make(map[string]*bindingspec.Action, len(s.Actions)),
		httpCalls: make(map[string]*bindingspec.HTTPCall, len(s.HTTPCalls)),
		tools:     make(map[string]*bindingspec.Tool, len(s.Tools)),
	}
	if b.IntegrationID != nil {
		l.IntegrationID = *b.IntegrationID
	}
	for i := range s.Reads {
		l.reads[s.Reads[i].Op] = &s.Reads[i]
	}
	for i := range s.Writes {
		l.writes[s.Writes[i].Op] = &s.Writes[i]
	}
	for i := range s.Actions {
		l.actions[s.Actions[i].Name] = &s.Actions[i]
	}
	for i := range s.HTTPCalls {
		l.httpCalls[s.HTTPCalls[i].Op] = &s.HTTPCalls[i]
	}
	for i := range s.Tools {
		l.tools[s.Tools[i].Op] = &s.Tools[i]
	}
	l.capabilities = bindingspec.GrantedCapabilities(s)
	if l.capabilities == nil {
		l.capabilities = []string{}
	}
	l.granted = make(map[string]bool, len(l.capabilities))
	for _, c := range l.capabilities {
		l.granted[c] = true
	}
	return l
}

// Read returns the `reads` op named op.
func (l *Loaded) Read(op string) (*bindingspec.Read, bool) { r, ok := l.reads[op]; return r, ok }

// Write returns the `writes` op named op.
func (l *Loaded) Write(op string) (*bindingspec.Write, bool) { w, ok := l.writes[op]; return w, ok }

// Action returns the action named name (actions are their own namespace).
func (l *Loaded) Action(name string) (*bindingspec.Action, bool) {
	a, ok := l.actions[name]
	return a, ok
}

// HTTPCall returns the `http_calls` op named op.
func (l *Loaded) HTTPCall(op string) (*bindingspec.HTTPCall, bool) {
	h, ok := l.httpCalls[op]
	return h, ok
}

// Tool returns the `tools` op named op.
func (l *Loaded) Tool(op string) (*bindingspec.Tool, bool) { t, ok := l.tools[op]; return t, ok }

// Grants reports whether the binding grants capability name: a
// grandfathered one always, any other only when its list names it.
func (l *Loaded) Grants(name string) bool { return l.granted[name] }

// Capabilities returns the granted capabilities in catalog order. The slice
// is shared: do not modify it.
func (l *Loaded) Capabilities() []string { return l.capabilities }
