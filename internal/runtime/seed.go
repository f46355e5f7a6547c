package runtime

import (
	"context"
	"fmt"

	"github.com/appruntime/appruntime/internal/apperr"
	"github.com/appruntime/appruntime/internal/bindingspec"
	"github.com/appruntime/appruntime/internal/datasource"
	"github.com/appruntime/appruntime/internal/session"
)

// MaxSeedRows bounds the rows one producer may seed.
const MaxSeedRows = 10000

// SeedWrite is one row a producer seeds through one of its binding's write
// ops: a producer's output is {"writes": [{"op": …, "row": {…}}, …]}.
type SeedWrite struct {
	Op  string         `json:"op"`
	Row map[string]any `json:"row"`
}

// Seed writes a producer's rows through the binding named by c (the
// artifact step's scope, no session), each through its write op with the
// same column rules and fixed values as /write, in one transaction on the
// binding's data source: all rows are written or none. It returns the rows
// affected. A bad row refuses the whole seed before anything is written.
func (s *Service) Seed(ctx context.Context, c session.Claims, rows []SeedWrite) (int64, error) {
	if len(rows) > MaxSeedRows {
		return 0, apperr.Invalidf("a producer may seed at most %d rows, not %d", MaxSeedRows, len(rows))
	}
	b, err := s.binding(ctx, c)
	if err != nil {
		return 0, err
	}
	if len(rows) == 0 {
		return 0, nil
	}
	if b.Kind == bindingspec.KindREST {
		return 0, apperr.Invalidf("a producer cannot seed rows through a REST binding")
	}
	stmts := make([]datasource.WriteStmt, len(rows))
	for i, w := range rows {
		op, ok := b.Write(w.Op)
		if !ok {
			return 0, apperr.Forbiddenf("writes[%d]: %q is not a write op of the binding", i, w.Op)
		}
		if w.Row == nil {
			return 0, apperr.Invalidf("writes[%d].row is required: the row to write", i)
		}
		if stmts[i], err = writeStmt(op, w.Row, c); err != nil {
			return 0, fmt.Errorf("writes[%d]: %w", i, err)
		}
	}
	src, err := s.source(ctx, b)
	if err != nil {
		return 0, err
	}
	tx, err := src.Begin(ctx)
	if err != nil {
		return 0, err
	}
	defer func() { _ = tx.Rollback(context.WithoutCancel(ctx)) }()
	var total int64
	for i, st := range stmts {
		n, err := tx.Write(ctx, st)
		if err != nil {
			return 0, fmt.Errorf("writes[%d] (op %q): %w", i, rows[i].Op, err)
		}
		total += n
	}
	return total, tx.Commit(ctx)
}
