package datasource

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/jackc/puddle/v2"

	"github.com/appruntime/appruntime/internal/apperr"
)

// postgresSource is a Postgres data source: one pgx pool. pgx prepares and
// caches a statement per SQL text on each connection, and the text depends
// only on the request's shape, so the hot path is one round trip.
type postgresSource struct {
	pool    *pgxpool.Pool
	timeout time.Duration
}

// openPostgres builds a pool on dsn. It does not dial: connections are made
// on first use, so a down data source fails its requests, not the process.
func openPostgres(dsn string, o Options) (*postgresSource, error) {
	cfg, err := pgxpool.ParseConfig(dsn)
	if err != nil {
		// The parse error may quote the DSN, password included: keep it out.
		return nil, errors.New("the DSN is not a valid Postgres connection string")
	}
	if !strings.Contains(dsn, "pool_max_conns") && o.MaxConns > 0 {
		cfg.MaxConns = o.MaxConns
	}
	if cfg.ConnConfig.ConnectTimeout == 0 {
		cfg.ConnConfig.ConnectTimeout = ConnectTimeout
	}
	// The server bounds each statement (query_canceled → 504). A deadline on
	// every query's context would do the same at the price of pgx watching
	// each context: a goroutine hand-off per query on the runtime's hot path.
	if _, set := cfg.ConnConfig.RuntimeParams["statement_timeout"]; !set {
		cfg.ConnConfig.RuntimeParams["statement_timeout"] = strconv.FormatInt(o.QueryTimeout.Milliseconds(), 10)
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
	rows, err := s.pool.Query(ctx, st.sql, args...)
	if err != nil {
		return Page{}, postgresError(err, st, s.timeout)
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
			return Page{}, postgresError(err, st, s.timeout)
		}
		for i, v := range values {
			values[i] = jsonPostgresValue(v, fields[i].DataTypeOID)
		}
		page.Rows = append(page.Rows, values)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return Page{}, postgresError(err, st, s.timeout)
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
		return nil, postgresError(err, nil, s.timeout)
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
	tag, err := db.Exec(ctx, st.sql, args...)
	if err != nil {
		return 0, postgresError(err, st, timeout)
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

func (t *postgresTx) Commit(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, t.timeout)
	defer cancel()
	if err := t.tx.Commit(ctx); err != nil {
		return postgresError(err, nil, t.timeout)
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
	return postgresError(err, nil, t.timeout)
}

// postgresError sorts a driver error into the client's fault (a value the
// database refused: 400), the data source's state (503, 504) and the data
// source being unreachable or misconfigured (502).
func postgresError(err error, st *statement, timeout time.Duration) error {
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		return classifyPgError(err, pgErr)
	}
	switch {
	case errors.Is(err, context.DeadlineExceeded), pgconn.Timeout(err):
		return apperr.Wrap(err, apperr.Timeout, "data source query took longer than %s", timeout)
	case errors.Is(err, context.Canceled):
		return fmt.Errorf("datasource: %w", err)
	case errors.Is(err, puddle.ErrClosedPool):
		// The integration's DSN changed and this pool is closing; the next
		// call gets the new one.
		return apperr.Wrap(err, apperr.Unavailable, "data source connection was replaced; retry")
	}
	if col, ok := encodeFailure(err, st); ok {
		if col == "" {
			return apperr.Wrap(err, apperr.Invalid, "a value does not fit its column's type")
		}
		return apperr.Wrap(err, apperr.Invalid, "value for column %q does not fit its type", col)
	}
	var connectErr *pgconn.ConnectError
	var netErr net.Error
	if errors.As(err, &connectErr) || errors.As(err, &netErr) {
		return apperr.Wrap(err, apperr.BadGateway, "cannot reach the data source")
	}
	return fmt.Errorf("datasource: %w", err)
}

func classifyPgError(err error, pgErr *pgconn.PgError) error {
	class := pgErr.Code[:min(2, len(pgErr.Code))]
	switch {
	case class == "22" || class == "23":
		// data_exception, integrity_constraint_violation: the message names
		// the type, column or constraint.
		return apperr.Wrap(err, apperr.Invalid, "data source refused the value: %s", pgErr.Message)
	case pgErr.Code == "57014": // query_canceled: statement_timeout
		return apperr.Wrap(err, apperr.Timeout, "data source canceled the query: %s", pgErr.Message)
	case class == "40": // serialization failure, deadlock
		return apperr.Wrap(err, apperr.Unavailable, "data source transaction conflicted with another; retry")
	case class == "08" || class == "53" || class == "57":
		return apperr.Wrap(err, apperr.Unavailable, "data source is unavailable: %s", pgErr.Message)
	case class == "28":
		return apperr.Wrap(err, apperr.BadGateway, "data source refused the integration's credentials")
	}
	// 42 (undefined table or column, privileges) and the rest: the binding
	// or the integration does not match the database. The database's words
	// name its tables and are for the operator (logged), not the bundle.
	return apperr.Wrap(err, apperr.BadGateway, "data source rejected the query (SQLSTATE %s): the binding does not match the database", pgErr.Code)
}

// encodeFailure reports whether pgx could not encode a bound argument for
// its parameter's type (a request value of the wrong type), and the column
// that argument was for. pgx reports this as text only.
func encodeFailure(err error, st *statement) (col string, ok bool) {
	const marker = "failed to encode args["
	msg := err.Error()
	i := strings.Index(msg, marker)
	if i < 0 {
		return "", false
	}
	rest := msg[i+len(marker):]
	end := strings.IndexByte(rest, ']')
	if end < 0 {
		return "", true
	}
	n, convErr := strconv.Atoi(rest[:end])
	if convErr != nil || st == nil || n < 0 || n >= len(st.argCols) {
		return "", true
	}
	return st.argCols[n], true
}
