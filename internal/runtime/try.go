package runtime

import (
	"context"
	"encoding/json"
	"sync"

	"github.com/appruntime/appruntime/internal/apperr"
	"github.com/appruntime/appruntime/internal/binding"
	"github.com/appruntime/appruntime/internal/bindingspec"
	"github.com/appruntime/appruntime/internal/datasource"
	"github.com/appruntime/appruntime/internal/gateway"
	"github.com/appruntime/appruntime/internal/session"
)

// TryInput is one "try an op" of the console: an op of a binding run with a
// sample payload and sample session values, as a bundle's session on a step
// with those values would run it.
type TryInput struct {
	Binding *binding.Loaded
	// Op names a read, write, http_call or action of the binding.
	Op      string
	Payload json.RawMessage
	// Session holds the sample task_id, agent_id and step_id; workspace_id is
	// always the binding's.
	Session map[string]string
}

// TryReport is what a try did: the exact SQL with its arguments, or the
// exact outbound requests (credentials masked), and the reply the verb
// would give. Writes are never kept.
type TryReport struct {
	// Kind is read, write, http_call or action.
	Kind       string                 `json:"kind"`
	Statements []datasource.Statement `json:"statements"`
	Requests   []gateway.Sent         `json:"requests"`
	// Reply is the verb's reply, or the error a bundle would get.
	Reply any `json:"reply"`
	// Status is the HTTP status a bundle would get.
	Status int `json:"status"`
	// RolledBack reports writes that ran and were rolled back; NotSent
	// requests that were shown but not sent (a rest write).
	RolledBack bool `json:"rolled_back,omitempty"`
	NotSent    bool `json:"not_sent,omitempty"`
}

// Try runs in.Op of in.Binding (docs/admins.md#the-console: the binding page's Try an op):
// a read for real, a write inside a data-source transaction that is rolled
// back (a rest write's request is shown, not sent), an http_call for real,
// an action's writes rolled back and its http_calls for real. Nothing is
// recorded: no intent, feed row, await release or rate-limit spend.
// A refusal is in the report (its status and message), not an error; an
// error is a failure to run the try at all.
func (s *Service) Try(ctx context.Context, in TryInput) (TryReport, error) {
	b := in.Binding
	c := session.Claims{WorkspaceID: b.WorkspaceID, BindingID: b.ID, SessionID: "console-try",
		TaskID: in.Session["task_id"], AgentID: in.Session["agent_id"], StepID: in.Session["step_id"]}
	rep := TryReport{Statements: []datasource.Statement{}, Requests: []gateway.Sent{}}
	var mu sync.Mutex
	ctx = gateway.WithSentFunc(ctx, func(sent gateway.Sent) {
		mu.Lock()
		rep.Requests = append(rep.Requests, sent)
		mu.Unlock()
	})
	payload := in.Payload
	if len(payload) == 0 {
		payload = json.RawMessage(`{}`)
	}
	var reply any
	var err error
	switch {
	case hasRead(b, in.Op):
		rep.Kind = "read"
		reply, err = s.tryRead(ctx, c, b, in.Op, payload, &rep)
	case hasWrite(b, in.Op):
		rep.Kind = "write"
		reply, err = s.tryWrite(ctx, c, b, in.Op, payload, &rep)
	case hasCall(b, in.Op):
		rep.Kind = "http_call"
		reply, err = s.tryCall(ctx, c, b, in.Op, payload)
	case hasAction(b, in.Op):
		rep.Kind = "action"
		reply, err = s.tryAction(ctx, c, b, in.Op, payload, &rep)
	default:
		err = apperr.Invalidf("op %q is not a read, write, http_call or action of binding %q", in.Op, b.Name)
	}
	mu.Lock()
	defer mu.Unlock()
	if err != nil {
		code, status, message := apperr.Public(err)
		if code == apperr.Internal {
			return rep, err
		}
		rep.Status, rep.Reply = status, map[string]any{"error": message}
		if d := apperr.DetailOf(err); d != nil {
			rep.Reply = d
		}
		return rep, nil
	}
	rep.Status, rep.Reply = 200, reply
	return rep, nil
}

func hasRead(b *binding.Loaded, op string) bool   { _, ok := b.Read(op); return ok }
func hasWrite(b *binding.Loaded, op string) bool  { _, ok := b.Write(op); return ok }
func hasCall(b *binding.Loaded, op string) bool   { _, ok := b.HTTPCall(op); return ok }
func hasAction(b *binding.Loaded, op string) bool { _, ok := b.Action(op); return ok }

func (s *Service) tryRead(ctx context.Context, c session.Claims, b *binding.Loaded, name string, payload json.RawMessage, rep *TryReport) (any, error) {
	op, _ := b.Read(name)
	var p readPayload
	if err := decodePayload(payload, &p); err != nil {
		return nil, err
	}
	columns, limit, err := readShape(op, p)
	if err != nil {
		return nil, err
	}
	if b.Kind == bindingspec.KindREST {
		call, err := s.restCall(ctx, b, op.Op, op.Request)
		if err != nil {
			return nil, err
		}
		if p.Cursor != "" {
			return nil, apperr.Invalidf("op %q is a rest read: its reply is one page, there is no cursor", op.Op)
		}
		resp, err := s.Gateway.Call(ctx, call, CallInput{WorkspaceID: c.WorkspaceID, Session: c.Values(), Values: restFilterValues(op, p)})
		if err != nil {
			return nil, err
		}
		rows, err := restRows(op.Op, resp, columns, limit)
		if err != nil {
			return nil, err
		}
		return &RowsReply{Kind: "rows", Columns: columns, Rows: rows, RowCount: len(rows)}, nil
	}
	offset, err := decodeCursor(s.CursorKey, p.Cursor, b.ID, op.Op)
	if err != nil {
		return nil, err
	}
	fixed, err := fixedMap(op.FixedFilters, c)
	if err != nil {
		return nil, err
	}
	q := datasource.SelectQuery{Table: op.Table, Columns: columns, Filters: p.Filters, FixedFilters: fixed,
		OrderBy: op.OrderBy, Limit: limit, Offset: offset}
	src, kind, err := s.sourceAndKind(ctx, b)
	if err != nil {
		return nil, err
	}
	st, err := datasource.SelectStatement(kind, q)
	if err != nil {
		return nil, err
	}
	rep.Statements = append(rep.Statements, st)
	page, err := src.Select(ctx, q)
	if err != nil {
		return nil, err
	}
	rows := page.Rows
	if rows == nil {
		rows = [][]any{}
	}
	return &RowsReply{Kind: "rows", Columns: page.Columns, Rows: rows, RowCount: len(rows)}, nil
}

func (s *Service) tryWrite(ctx context.Context, c session.Claims, b *binding.Loaded, name string, payload json.RawMessage, rep *TryReport) (any, error) {
	op, _ := b.Write(name)
	var p writePayload
	if err := decodePayload(payload, &p); err != nil {
		return nil, err
	}
	if p.Row == nil {
		return nil, apperr.Invalidf("payload.row is required: the row to write")
	}
	stmt, err := writeStmt(op, p.Row, c)
	if err != nil {
		return nil, err
	}
	if b.Kind == bindingspec.KindREST {
		call, err := s.restCall(ctx, b, op.Op, op.Request)
		if err != nil {
			return nil, err
		}
		if len(call.BodyTemplate) == 0 && contains(bodyMethods, call.Method) {
			call.BodyTemplate = rowTemplate(stmt.Values)
		}
		previewer, ok := s.Gateway.(interface {
			Preview(context.Context, *bindingspec.HTTPCall, CallInput) (gateway.Sent, error)
		})
		if !ok {
			return nil, apperr.NotImplementedf("this deployment's gateway cannot show a request without sending it")
		}
		sent, err := previewer.Preview(ctx, call, CallInput{WorkspaceID: c.WorkspaceID, Session: c.Values(), Values: stmt.Values})
		if err != nil {
			return nil, err
		}
		rep.Requests, rep.NotSent = append(rep.Requests, sent), true
		return map[string]any{"not_sent": "a rest write cannot be rolled back, so try shows its request without sending it"}, nil
	}
	n, err := s.tryStatements(ctx, b, []datasource.WriteStmt{stmt}, rep, nil)
	if err != nil {
		return nil, err
	}
	return &WriteReply{RowsAffected: n[0]}, nil
}

func (s *Service) tryCall(ctx context.Context, c session.Claims, b *binding.Loaded, name string, payload json.RawMessage) (any, error) {
	call, _ := b.HTTPCall(name)
	if s.Gateway == nil {
		return nil, apperr.NotImplementedf("this deployment has no HTTP gateway; http_calls are not served")
	}
	values := map[string]any{}
	if err := decodePayload(payload, &values); err != nil {
		return nil, err
	}
	resp, err := s.Gateway.Call(ctx, call, CallInput{WorkspaceID: c.WorkspaceID, Session: c.Values(), Values: values})
	if err != nil {
		return nil, err
	}
	return &HTTPReply{Kind: "http", Response: resp}, nil
}

// tryAction runs an action's writes in a transaction, then its http_calls
// for real inside it, and rolls the writes back whatever they answered.
func (s *Service) tryAction(ctx context.Context, c session.Claims, b *binding.Loaded, name string, payload json.RawMessage, rep *TryReport) (any, error) {
	act, _ := b.Action(name)
	if len(act.HTTPCalls) > 0 && s.Gateway == nil {
		return nil, apperr.NotImplementedf("this deployment has no HTTP gateway; action %q makes http_calls", act.Name)
	}
	var p actionPayload
	if err := decodePayload(payload, &p); err != nil {
		return nil, err
	}
	for name := range p.Rows {
		if !contains(act.Writes, name) {
			return nil, apperr.Forbiddenf("write %q is not part of action %q", name, act.Name)
		}
	}
	stmts := make([]datasource.WriteStmt, len(act.Writes))
	for i, name := range act.Writes {
		op, _ := b.Write(name)
		row := p.Rows[name]
		if row == nil {
			row = map[string]any{}
		}
		var err error
		if stmts[i], err = writeStmt(op, row, c); err != nil {
			return nil, err
		}
	}
	results, responses := map[string]any{}, map[string]any{}
	calls := func(ctx context.Context) error {
		return s.callAll(ctx, c, b, act, p.Values, results, responses)
	}
	if len(stmts) == 0 {
		if err := calls(ctx); err != nil {
			return nil, err
		}
	} else {
		n, err := s.tryStatements(ctx, b, stmts, rep, calls)
		if err != nil {
			return nil, err
		}
		for i, name := range act.Writes {
			results[name] = n[i]
		}
	}
	results["await_resolved"] = false
	out := ActionResults{Results: results, Responses: responses}
	return &ActionReply{OK: true, ActionResults: out}, nil
}

// tryStatements runs stmts in one data-source transaction, then then (when
// not nil) inside it, and rolls the transaction back.
func (s *Service) tryStatements(ctx context.Context, b *binding.Loaded, stmts []datasource.WriteStmt, rep *TryReport, then func(context.Context) error) ([]int64, error) {
	src, kind, err := s.sourceAndKind(ctx, b)
	if err != nil {
		return nil, err
	}
	tx, err := src.Begin(ctx)
	if err != nil {
		return nil, err
	}
	defer func() { _ = tx.Rollback(context.WithoutCancel(ctx)) }()
	rep.RolledBack = true
	n := make([]int64, len(stmts))
	for i, st := range stmts {
		shown, err := datasource.WriteStatement(kind, st)
		if err != nil {
			return nil, err
		}
		rep.Statements = append(rep.Statements, shown)
		if n[i], err = tx.Write(ctx, st); err != nil {
			return nil, err
		}
	}
	if then != nil {
		if err := then(ctx); err != nil {
			return nil, err
		}
	}
	return n, nil
}

// sourceAndKind returns the data source of a postgres binding and its
// integration's kind (the SQL dialect).
func (s *Service) sourceAndKind(ctx context.Context, b *binding.Loaded) (datasource.Source, string, error) {
	if b.IntegrationID == "" {
		return nil, "", apperr.Forbiddenf("binding %q names no data source", b.Name)
	}
	integ, err := s.integration(ctx, b.WorkspaceID, b.IntegrationID)
	if err != nil {
		return nil, "", err
	}
	src, err := s.Sources.Source(ctx, integ)
	return src, integ.Kind, err
}
