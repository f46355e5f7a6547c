package runtime

import (
	"context"
	"maps"

	"github.com/appruntime/appruntime/internal/apperr"
	"github.com/appruntime/appruntime/internal/binding"
	"github.com/appruntime/appruntime/internal/bindingspec"
	"github.com/appruntime/appruntime/internal/datasource"
	"github.com/appruntime/appruntime/internal/session"
)

// writePayload is what a `writes` op takes: one row.
type writePayload struct {
	Row map[string]any `json:"row"`
}

// Write runs one `writes` op on one row and records one feed row: a write
// intent is committed first (409 when the step's await is settled), the
// row is written, and the intent becomes the feed row (internal/intent),
// committed just after the reply.
func (s *Service) Write(ctx context.Context, c session.Claims, body []byte) (Result, error) {
	v, op, err := prelude[*bindingspec.Write, writePayload](ctx, s, c, body, "write", (*binding.Loaded).Write)
	if err != nil {
		return Result{}, err
	}
	b, p := v.b, v.p
	if p.Row == nil {
		return Result{}, apperr.Invalidf("payload.row is required: the row to write")
	}
	stmt, err := writeStmt(op, p.Row, c)
	if err != nil {
		return Result{}, err
	}
	record := intentRecord("write", "op", op.Op, "row", v.body, p.Row)
	if b.Kind == bindingspec.KindREST {
		return s.restWrite(ctx, c, b, op, record, stmt.Values)
	}
	src, err := s.source(ctx, b)
	if err != nil {
		return Result{}, err
	}
	in, err := s.openIntent(ctx, c, op.Op, record)
	if err != nil {
		return Result{}, err
	}
	// Once its intent is recorded, the write runs to its end even when the
	// caller hangs up or the process begins to stop: cut short, it would
	// leave an outcome-unknown record instead of a known one.
	ctx = context.WithoutCancel(ctx)
	n, err := src.Write(ctx, stmt)
	if err != nil {
		return Result{}, s.settleFailed(ctx, in, err, datasource.AnswerLost(err))
	}
	if err := s.completeIntent(ctx, in, n); err != nil {
		// The row is written: answering an error would invite a second
		// one. The intent stays, and the sweep records the write.
		return Result{Kind: "write", Body: &WriteReply{RowsAffected: n}}, nil
	}
	return Result{Kind: "write", Body: &WriteReply{RowsAffected: n}}, nil
}

// writeStmt checks a request row against a write op and adds the op's fixed
// values. An op whose fixed value is not a key column (saved before that
// rule) is 403 whatever the row. Only declared columns (writable or key) may be sent: anything else
// is 403; a key column missing for update or upsert is 400, unless the op
// fixes it (a key column in fixed_values scopes the row to the session, and
// the fixed value wins over any the request sends).
func writeStmt(op *bindingspec.Write, row map[string]any, c session.Claims) (datasource.WriteStmt, error) {
	if col := op.UnscopedFixedColumn(); col != "" {
		// Saved before the rule: running it could move another row into this
		// session's scope. The binding, not the request, is at fault, and no
		// retry helps until an admin fixes it (appruntime migrate lists it).
		return datasource.WriteStmt{}, apperr.Forbiddenf("write op %q is disabled: its fixed value for column %q is not one of its key columns; an admin must fix the binding", op.Op, col)
	}
	for col := range row {
		if !contains(op.Columns, col) && !contains(op.KeyColumns, col) {
			return datasource.WriteStmt{}, apperr.Forbiddenf("column %q is not writable through op %q", col, op.Op)
		}
	}
	fixed, err := fixedMap(op.FixedValues, c)
	if err != nil {
		return datasource.WriteStmt{}, err
	}
	// An op that fixes nothing writes the request's row as it is (nothing
	// changes a statement's values); one that fixes values gets a map of its
	// own, so the request's row is never changed.
	values := row
	if len(fixed) > 0 {
		values = make(map[string]any, len(row)+len(fixed))
		maps.Copy(values, row)
		maps.Copy(values, fixed)
	}
	if op.Mode != bindingspec.ModeInsert {
		for _, k := range op.KeyColumns {
			if _, ok := values[k]; !ok {
				return datasource.WriteStmt{}, apperr.Invalidf("key column %q is required for op %q", k, op.Op)
			}
		}
	}
	if op.Mode == bindingspec.ModeUpdate && len(values) == len(op.KeyColumns) {
		return datasource.WriteStmt{}, apperr.Invalidf("op %q: the row sets no column to update", op.Op)
	}
	return datasource.WriteStmt{Table: op.Table, Mode: op.Mode, KeyColumns: op.KeyColumns, Values: values}, nil
}
