package store

import (
	"context"
	"strings"
	"sync/atomic"

	"github.com/jackc/pgx/v5"
)

// Counted is what the platform has sent its Postgres database since the
// process started: every statement (BEGIN and COMMIT included) and the
// transactions among them (each BEGIN). It is the platform's side of the
// counted costs of docs/performance.md#counted-costs, exported as
// appruntime_platform_db_statements_total and _transactions_total; SQLite
// (dev mode) is not counted.
type Counted struct {
	Statements, Transactions uint64
}

// statementCounter is a pgx tracer that counts the statements a
// connection sends: an atomic add per statement, no allocation.
type statementCounter struct {
	statements, transactions atomic.Uint64
}

func (c *statementCounter) TraceQueryStart(ctx context.Context, _ *pgx.Conn, data pgx.TraceQueryStartData) context.Context {
	c.statements.Add(1)
	if len(data.SQL) >= 5 && strings.EqualFold(data.SQL[:5], "begin") {
		c.transactions.Add(1)
	}
	return ctx
}

func (*statementCounter) TraceQueryEnd(context.Context, *pgx.Conn, pgx.TraceQueryEndData) {}

// A batch's statements (the review queue's claim, claim.Queue.Next) count
// one each, as they would one by one; its implicit transaction has no BEGIN.
func (c *statementCounter) TraceBatchStart(ctx context.Context, _ *pgx.Conn, _ pgx.TraceBatchStartData) context.Context {
	return ctx
}

func (c *statementCounter) TraceBatchQuery(context.Context, *pgx.Conn, pgx.TraceBatchQueryData) {
	c.statements.Add(1)
}

func (*statementCounter) TraceBatchEnd(context.Context, *pgx.Conn, pgx.TraceBatchEndData) {}

// Counted returns the statements and transactions sent so far (zero on
// SQLite).
func (s *Store) Counted() Counted {
	if s.counter == nil {
		return Counted{}
	}
	return Counted{Statements: s.counter.statements.Load(), Transactions: s.counter.transactions.Load()}
}
