package datasource

import (
	"context"
	"time"
)

// Statements as Options.ObserveFunc names them (the statement label of
// appruntime_datasource_query_duration_seconds).
const (
	StatementSelect   = "select"
	StatementWrite    = "write"
	StatementBegin    = "begin"
	StatementCommit   = "commit"
	StatementRollback = "rollback"
)

// observed tells ObserveFunc of every statement of the source it wraps.
type observed struct {
	closableSource
	driver  string
	observe func(driver, statement string, failed bool, d time.Duration)
}

func (o observed) Select(ctx context.Context, q SelectQuery) (Page, error) {
	start := time.Now()
	p, err := o.closableSource.Select(ctx, q)
	o.observe(o.driver, StatementSelect, err != nil, time.Since(start))
	return p, err
}

func (o observed) Write(ctx context.Context, w WriteStmt) (int64, error) {
	start := time.Now()
	n, err := o.closableSource.Write(ctx, w)
	o.observe(o.driver, StatementWrite, err != nil, time.Since(start))
	return n, err
}

func (o observed) Begin(ctx context.Context) (Tx, error) {
	start := time.Now()
	tx, err := o.closableSource.Begin(ctx)
	o.observe(o.driver, StatementBegin, err != nil, time.Since(start))
	if err != nil {
		return nil, err
	}
	return &observedTx{Tx: tx, src: o}, nil
}

// observedTx is a transaction of an observed source. The Rollback deferred
// after a Commit does nothing and is not counted.
type observedTx struct {
	Tx
	src       observed
	committed bool
}

func (t *observedTx) Write(ctx context.Context, w WriteStmt) (int64, error) {
	start := time.Now()
	n, err := t.Tx.Write(ctx, w)
	t.src.observe(t.src.driver, StatementWrite, err != nil, time.Since(start))
	return n, err
}

func (t *observedTx) Commit(ctx context.Context) error {
	start := time.Now()
	err := t.Tx.Commit(ctx)
	t.committed = err == nil
	t.src.observe(t.src.driver, StatementCommit, err != nil, time.Since(start))
	return err
}

func (t *observedTx) Rollback(ctx context.Context) error {
	if t.committed {
		return t.Tx.Rollback(ctx)
	}
	start := time.Now()
	err := t.Tx.Rollback(ctx)
	t.src.observe(t.src.driver, StatementRollback, err != nil, time.Since(start))
	return err
}
