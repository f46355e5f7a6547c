package runtime

import (
	"context"

	"github.com/appruntime/appruntime/internal/bindingspec"
	"github.com/appruntime/appruntime/internal/session"
)

// Result is a verb's success: its kind (v2's "kind"), the object the verb
// returns without the v2 header (Body, the v1 shape), and v2's "result",
// which is that same object except for /action, whose v1 reply carries an
// "ok" that v2 moves to the envelope (seed 000: for /action, {results, responses}).
type Result struct {
	Kind   string
	Body   any
	Result any // nil: the same as Body
}

// V2 returns the v2 envelope of r.
func (r Result) V2() Envelope {
	result := r.Result
	if result == nil {
		result = r.Body
	}
	return Envelope{OK: true, Kind: r.Kind, Result: result}
}

// Envelope is the v2 success envelope.
type Envelope struct {
	OK     bool   `json:"ok"`
	Kind   string `json:"kind"`
	Result any    `json:"result"`
}

// RowsReply is a database read's reply.
type RowsReply struct {
	Kind       string   `json:"kind"` // "rows"
	Columns    []string `json:"columns"`
	Rows       [][]any  `json:"rows"`
	RowCount   int      `json:"row_count"`
	NextCursor *string  `json:"next_cursor"`
}

// HTTPReply is a lookup's reply: the upstream's own status and body (or
// text), answered with 200 whatever that status is.
type HTTPReply struct {
	Kind string `json:"kind"` // "http"
	Response
}

// WriteReply is /write's reply.
type WriteReply struct {
	RowsAffected int64 `json:"rows_affected"`
}

// ActionResults are an action's results and the upstream replies of its http_calls.
type ActionResults struct {
	// Results are rows affected per write, status per http op and await_resolved.
	Results map[string]any `json:"results"`
	// Responses are each http op's {status, body|text}.
	Responses map[string]any `json:"responses"`
}

// ActionReply is /action's v1 reply.
type ActionReply struct {
	OK bool `json:"ok"`
	ActionResults
}

// Op kinds of the verbs whose kind does not depend on the op (a read's is
// KindRows or KindHTTP, a capability's its name).
const (
	KindRows   = "rows"
	KindHTTP   = "http"
	KindWrite  = "write"
	KindAction = "action"
	KindRun    = "run"
)

// OpKind returns the kind of the op a call of verb with body names, for a
// call that failed (a success's kind is its Result.Kind): the verb's own
// kind, a read's rows or http as the session's binding declares the op, a
// capability's name when the catalog knows it; "" when the body names no op
// the binding knows. It is for metrics and costs a parse; call it on the
// error path only.
func (s *Service) OpKind(ctx context.Context, c session.Claims, verb string, body []byte) string {
	switch verb {
	case "write":
		return KindWrite
	case "action":
		return KindAction
	case "run":
		return KindRun
	}
	r, err := ParseRequest(body)
	if err != nil {
		return ""
	}
	if verb == "capability" {
		if _, known := bindingspec.LookupCapability(r.Op); known {
			return r.Op
		}
		return ""
	}
	b, err := s.binding(ctx, c)
	if err != nil {
		return ""
	}
	if _, ok := b.Read(r.Op); ok {
		return KindRows
	}
	if _, ok := b.HTTPCall(r.Op); ok {
		return KindHTTP
	}
	return ""
}
