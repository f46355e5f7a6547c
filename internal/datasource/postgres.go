package datasource

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/appruntime/appruntime/internal/apperr"
)

// postgresSource is a Postgres data source: one pgx pool. pgx prepares and
// caches a statement per SQL text on each connection, and the text depends
// only on the request's shape, so the hot path is one round trip.
type postgresSource struct {
	pool    *pgxpool.Pool
	timeout time.Duration
}

// openPostgres builds a pool on dsn, which must pass CheckPostgresDSN. It
// does not dial: connections are made on first use, so a down data source
// fails its requests, not the process. Every connection dials through g.
func openPostgres(dsn string, o Options, g Guard) (*postgresSource, error) {
	cfg, d, err := g.postgresConfig(dsn)
	if err != nil {
		return nil, err
	}
	if !d.params.Has("pool_max_conns") && o.MaxConns > 0 {
		cfg.MaxConns = o.MaxConns
	}
	cc := &cfg.ConnConfig.Config
	// The server bounds each statement (query_canceled → 504). A deadline on
	// every query's context would do the same at the price of pgx watching
	// each context: a goroutine hand-off per query on the runtime's hot path.
	if _, set := cc.RuntimeParams["statement_timeout"]; !set {
		cc.RuntimeParams["statement_timeout"] = strconv.FormatInt(o.QueryTimeout.Milliseconds(), 10)
	}
	pool, err := pgxpool.NewWithConfig(context.Background(), cfg)
	if err != nil {
		return nil, fmt.Errorf("open pool: %w", err)
	}
	return &postgresSource{pool: pool, timeout: o.QueryTimeout}, nil
}

func (s *postgresSource) close() { s.pool.Close() }

// Select implements Source.
func (s *postgresSource) Select(ctx context.Context, q SelectQuery) (Page, error) {
	limit, err := pageLimit(q)
	if err != nil {
		return Page{}, err
	}
	st, args, err := postgresDialect.buildSelect(q, limit)
	if err != nil {
		return Page{}, err
	}
	// The statement is bounded by the server (statement_timeout), not by
	// ctx: a context that can end (a request's ends with the process) makes
	// pgx watch it for the query's length (context.AfterFunc and its undo
	// per query, 1.3 of the api's 40 µs of CPU per /read in pprof).
	rows, err := s.pool.Query(context.WithoutCancel(ctx), st.sql, args...)
	if err != nil {
		return Page{}, postgresError(err, st, args, s.timeout)
	}
	defer rows.Close()
	fields := rows.FieldDescriptions()
	page := Page{Columns: q.Columns, Rows: make([][]any, 0, min(limit, 64))}
	for rows.Next() {
		if len(page.Rows) == limit {
			page.HasMore = true
			break
		}
		values, err := rows.Values()
		if err != nil {
			return Page{}, postgresError(err, st, args, s.timeout)
		}
		for i, v := range values {
			values[i] = jsonPostgresValue(v, fields[i].DataTypeOID)
		}
		page.Rows = append(page.Rows, values)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return Page{}, postgresError(err, st, args, s.timeout)
	}
	return page, nil
}

// Write implements Source.
func (s *postgresSource) Write(ctx context.Context, w WriteStmt) (int64, error) {
	return postgresWrite(ctx, s.pool, w, s.timeout)
}

// Begin implements Source.
func (s *postgresSource) Begin(ctx context.Context) (Tx, error) {
	tx, err := s.pool.Begin(ctx)
	if err != nil {
		return nil, postgresError(err, nil, nil, s.timeout)
	}
	return &postgresTx{tx: tx, timeout: s.timeout}, nil
}

// execer is what a write runs on: the pool or a transaction.
type execer interface {
	Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
}

func postgresWrite(ctx context.Context, db execer, w WriteStmt, timeout time.Duration) (int64, error) {
	st, args, err := postgresDialect.buildWrite(w)
	if err != nil {
		return 0, err
	}
	// Not bound to ctx, as a read is not (Select): the server's
	// statement_timeout bounds it, and a write cut off by the process's
	// shutdown would only turn a committed write's outcome unknown.
	tag, err := db.Exec(context.WithoutCancel(ctx), st.sql, args...)
	if err != nil {
		return 0, postgresError(err, st, args, timeout)
	}
	return tag.RowsAffected(), nil
}

// postgresTx is a Tx on a pooled connection.
type postgresTx struct {
	tx      pgx.Tx
	timeout time.Duration
}

func (t *postgresTx) Write(ctx context.Context, w WriteStmt) (int64, error) {
	return postgresWrite(ctx, t.tx, w, t.timeout)
}

// ID implements Tx: txid_current() assigns the transaction its id (an
// epoch-extended xid, which never wraps around).
func (t *postgresTx) ID(ctx context.Context) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, t.timeout)
	defer cancel()
	var id int64
	if err := t.tx.QueryRow(ctx, "SELECT txid_current()").Scan(&id); err != nil {
		return "", postgresError(err, nil, nil, t.timeout)
	}
	return strconv.FormatInt(id, 10), nil
}

// TxStatus implements Source with txid_status (Postgres 10+), which
// answers from the commit log: NULL once the transaction is older than
// what the server keeps.
func (s *postgresSource) TxStatus(ctx context.Context, id string) (TxOutcome, error) {
	xid, err := strconv.ParseInt(id, 10, 64)
	if err != nil {
		return TxUnknown, apperr.Invalidf("datasource: %q is not a transaction id", id)
	}
	ctx, cancel := context.WithTimeout(ctx, s.timeout)
	defer cancel()
	var status *string
	if err := s.pool.QueryRow(ctx, "SELECT txid_status($1)", xid).Scan(&status); err != nil {
		return TxUnknown, postgresError(err, nil, nil, s.timeout)
	}
	if status == nil {
		return TxUnknown, nil
	}
	switch o := TxOutcome(*status); o {
	case TxCommitted, TxAborted, TxInProgress:
		return o, nil
	}
	return TxUnknown, nil
}

func (t *postgresTx) Commit(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, t.timeout)
	defer cancel()
	if err := t.tx.Commit(ctx); err != nil {
		return postgresError(err, nil, nil, t.timeout)
	}
	return nil
}

func (t *postgresTx) Rollback(ctx context.Context) error {
	// Rollback runs on cleanup paths whose context may already be done.
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), t.timeout)
	defer cancel()
	err := t.tx.Rollback(ctx)
	if err == nil || errors.Is(err, pgx.ErrTxClosed) {
		return nil
	}
	return postgresError(err, nil, nil, t.timeout)
}
