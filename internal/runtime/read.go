package runtime

import (
	"context"

	"github.com/appruntime/appruntime/internal/apperr"
	"github.com/appruntime/appruntime/internal/binding"
	"github.com/appruntime/appruntime/internal/bindingspec"
	"github.com/appruntime/appruntime/internal/datasource"
	"github.com/appruntime/appruntime/internal/session"
	"github.com/appruntime/appruntime/internal/strictjson"
)

// readPayload is what a `reads` op takes.
type readPayload struct {
	Columns []string       `json:"columns,omitempty"` // a subset of the declared columns; all when empty
	Filters map[string]any `json:"filters,omitempty"` // on declared filterable columns
	Cursor  string         `json:"cursor,omitempty"`  // next_cursor of the previous page
	Limit   int            `json:"limit,omitempty"`   // at most the op's limit
}

// Read runs one `reads` op, or one `http_calls` op (a lookup). A reads op of
// the same name takes precedence, so a lookup can never shadow a database read.
// The binding is loaded first, so that a body naming a lookup is parsed once,
// with its payload as the lookup's values, never as a read's.
func (s *Service) Read(ctx context.Context, c session.Claims, body []byte) (Result, error) {
	b, err := bindingFirst(ctx, s, c, body)
	if err != nil {
		return Result{}, err
	}
	// The op is looked up in the body's own bytes: string(op) does not escape, so
	// the compiler copies a name of up to 32 bytes on the stack, not the heap.
	if op, ok := strictjson.PeekBytes(body, "op"); ok {
		if call, isCall := b.HTTPCall(string(op)); isCall {
			if _, isRead := b.Read(string(op)); !isRead {
				return s.lookupBody(ctx, c, call, body)
			}
		}
	}
	v, err := beginOn[readPayload](b, body)
	if err != nil {
		return Result{}, err
	}
	if op, ok := v.b.Read(v.Op); ok {
		p, err := v.payload()
		if err != nil {
			return Result{}, err
		}
		return s.readRows(ctx, c, v.b, op, p)
	}
	call, ok := v.b.HTTPCall(v.Op)
	if !ok {
		return Result{}, opNotAllowed("read", v.Op)
	}
	values, err := payloadAs[map[string]any](v)
	if err != nil {
		return Result{}, err
	}
	if values == nil {
		values = map[string]any{}
	}
	return s.lookup(ctx, c, call, values)
}

func (s *Service) readRows(ctx context.Context, c session.Claims, b *binding.Loaded, op *bindingspec.Read, p readPayload) (Result, error) {
	columns, limit, err := readShape(op, p)
	if err != nil {
		return Result{}, err
	}
	if b.Kind == bindingspec.KindREST {
		return s.restRead(ctx, c, b, op, p, columns, limit)
	}
	offset, err := decodeCursor(s.CursorKey, p.Cursor, b.ID, op.Op)
	if err != nil {
		return Result{}, err
	}
	fixed, err := fixedMap(op.FixedFilters, c)
	if err != nil {
		return Result{}, err
	}
	src, err := s.source(ctx, b)
	if err != nil {
		return Result{}, err
	}
	page, err := src.Select(ctx, datasource.SelectQuery{
		Table: op.Table, Columns: columns, Filters: p.Filters, FixedFilters: fixed,
		OrderBy: op.OrderBy, Limit: limit, Offset: offset,
	})
	if err != nil {
		return Result{}, err
	}
	reply := &RowsReply{Kind: "rows", Columns: page.Columns, Rows: page.Rows, RowCount: len(page.Rows)}
	if reply.Rows == nil {
		reply.Rows = [][]any{}
	}
	if page.HasMore {
		next := encodeCursor(s.CursorKey, cursor{Binding: b.ID, Op: op.Op, Offset: offset + len(page.Rows)})
		reply.NextCursor = &next
	}
	return Result{Kind: "rows", Body: reply}, nil
}

// readShape checks a read request against its op: the columns it returns
// (a subset of the declared ones, all by default), its filters (on
// filterable columns only) and its page size (at most the op's limit).
func readShape(op *bindingspec.Read, p readPayload) (columns []string, limit int, err error) {
	columns = op.Columns
	if len(p.Columns) > 0 {
		for _, col := range p.Columns {
			if !contains(op.Columns, col) {
				return nil, 0, apperr.Forbiddenf("column %q is not readable through op %q", col, op.Op)
			}
		}
		columns = p.Columns
	}
	for col := range p.Filters {
		if !contains(op.Filterable, col) {
			return nil, 0, apperr.Forbiddenf("column %q is not filterable through op %q", col, op.Op)
		}
	}
	limit = op.Limit
	if limit <= 0 {
		limit = bindingspec.DefaultReadLimit
	}
	if p.Limit < 0 {
		return nil, 0, apperr.Invalidf("limit must not be negative")
	}
	if p.Limit > 0 && p.Limit < limit {
		limit = p.Limit
	}
	return columns, limit, nil
}

// lookupBody runs call, the http_calls op that body names, with the body's
// payload as its values.
func (s *Service) lookupBody(ctx context.Context, c session.Claims, call *bindingspec.HTTPCall, body []byte) (Result, error) {
	r, values, decoded, err := parse[map[string]any](body)
	if err != nil {
		return Result{}, err
	}
	if !decoded {
		if err := decodePayload(r.Payload, &values); err != nil {
			return Result{}, err
		}
	}
	if values == nil {
		values = map[string]any{}
	}
	return s.lookup(ctx, c, call, values)
}

// lookup runs an http_calls op: rate-limited per surface, bounded by the
// process-wide bulkhead, and answered with the upstream's own status and body.
func (s *Service) lookup(ctx context.Context, c session.Claims, call *bindingspec.HTTPCall, values map[string]any) (Result, error) {
	if s.Gateway == nil {
		return Result{}, apperr.NotImplementedf("this deployment has no HTTP gateway; http_calls are not served")
	}
	resp, err := s.callUpstream(ctx, c, call, values)
	if err != nil {
		return Result{}, err
	}
	return Result{Kind: "http", Body: &HTTPReply{Kind: "http", Response: resp}}, nil
}

// callUpstream sends one read request upstream for a session, as a lookup
// and a rest read do: the surface's rate limit first, then a slot of the
// process-wide bulkhead for the call.
func (s *Service) callUpstream(ctx context.Context, c session.Claims, call *bindingspec.HTTPCall, values map[string]any) (Response, error) {
	if err := s.Limiter.Allow(ctx, c.Surface()); err != nil {
		return Response{}, err
	}
	release, err := s.Bulkhead.Acquire(ctx)
	if err != nil {
		return Response{}, err
	}
	defer release()
	return s.Gateway.Call(ctx, call, CallInput{WorkspaceID: c.WorkspaceID, Session: c.Values(), Values: values})
}
