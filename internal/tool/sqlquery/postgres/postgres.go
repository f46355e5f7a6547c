package postgres

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/appruntime/appruntime/internal/apperr"
	"github.com/appruntime/appruntime/internal/crypt"
	"github.com/appruntime/appruntime/internal/datasource"
	"github.com/appruntime/appruntime/internal/gateway"
	"github.com/appruntime/appruntime/internal/tool"
	"github.com/appruntime/appruntime/internal/tool/sqlquery"
)

// IntegrationKind is the integration kind whose DSN the tool connects with.
const IntegrationKind = "postgres"

// Options configure the executor.
type Options = sqlquery.Options

// Executor runs postgres_execute_query. It is safe for concurrent use;
// Close ends its pools.
type Executor struct {
	opts  Options
	pools *sqlquery.Pools[*pgxpool.Pool]
	// check is the gate a stored query passes before it runs: Check, but in
	// the tests of the layers under it (the READ ONLY transaction, the
	// reset), which need queries the gate refuses.
	check func(query string) (sqlquery.Statement, error)
}

// New returns an executor that opens integration secrets with box.
func New(box *crypt.Box, opts Options) *Executor {
	e := &Executor{opts: opts.WithDefaults(), check: Check}
	e.pools = sqlquery.NewPools(box, IntegrationKind, e.openPool, (*pgxpool.Pool).Close)
	return e
}

// Close closes every pool.
func (e *Executor) Close() { e.pools.Close() }

// openPool builds a pool on dsn. It does not dial. The DSN keeps the data
// sources' rules (one host, no unix socket, no file parameters) and every
// connection goes through their guard: the addresses DATASOURCE_ALLOW_CIDRS
// admits, never the platform's Postgres server (datasource.Guard).
func (e *Executor) openPool(dsn string) (*pgxpool.Pool, error) {
	cfg, err := e.opts.Guard.PostgresConfig(dsn)
	if err != nil {
		return nil, err
	}
	cfg.MaxConns = int32(e.opts.MaxConns)
	cc := cfg.ConnConfig
	if cc.ConnectTimeout == 0 || cc.ConnectTimeout > gateway.DialTimeout {
		cc.ConnectTimeout = gateway.DialTimeout
	}
	// Describe, then execute, with no statement cache: the parameter types
	// come from the server, and DISCARD ALL has nothing of ours to drop. The
	// extended protocol also refuses a second statement on its own.
	cc.DefaultQueryExecMode = pgx.QueryExecModeDescribeExec
	cc.StatementCacheCapacity, cc.DescriptionCacheCapacity = 0, 0
	// Read-only by default for the whole session, under the explicit
	// READ ONLY transaction.
	cc.RuntimeParams["default_transaction_read_only"] = "on"
	// The gate's parser reads '\' as a plain character in '…' literals;
	// the server must read the query the same way.
	cc.RuntimeParams["standard_conforming_strings"] = "on"
	cc.RuntimeParams["application_name"] = "appruntime postgres_execute_query"
	pool, err := pgxpool.NewWithConfig(context.Background(), cfg)
	if err != nil {
		return nil, fmt.Errorf("open pool: %w", err)
	}
	return pool, nil
}

// Run implements tool.Executor.
func (e *Executor) Run(ctx context.Context, call tool.Call) (tool.Result, error) {
	query, args, err := sqlquery.Prepare(call, e.check)
	if err != nil {
		return tool.Result{}, err
	}
	pool, err := e.pools.Get(call.Integration)
	if err != nil {
		return tool.Result{}, err
	}
	conn, err := pool.Acquire(ctx)
	if err != nil {
		return tool.Result{}, classify(ctx, err)
	}
	table, err := e.readOnly(ctx, conn.Conn(), query, args)
	if !e.reset(ctx, conn.Conn()) {
		// A connection that could not be reset is not used again.
		_ = conn.Conn().Close(context.Background())
	}
	conn.Release()
	if err != nil {
		return tool.Result{}, classify(ctx, err)
	}
	return table.Result()
}

// readOnly runs query in a READ ONLY transaction bounded by the statement
// and lock timeouts, and always rolls it back. The statement timeout is
// also the run's remaining time, so the server itself stops a query at
// the run's deadline: pgx only closes its side of the connection when a
// context ends, and a query that sends nothing until it finishes (a
// count over a long scan) ran on in the server after its caller left.
func (e *Executor) readOnly(ctx context.Context, conn *pgx.Conn, query string, args []any) (*sqlquery.Table, error) {
	timeout := e.opts.StatementTimeout
	if deadline, ok := ctx.Deadline(); ok {
		timeout = min(timeout, max(time.Until(deadline), time.Millisecond)) // 0 would mean none
	}
	begin := "BEGIN READ ONLY; SET LOCAL statement_timeout = " + strconv.FormatInt(max(timeout.Milliseconds(), 1), 10) +
		"; SET LOCAL lock_timeout = " + strconv.FormatInt(e.opts.LockTimeout.Milliseconds(), 10) +
		"; SET LOCAL idle_in_transaction_session_timeout = " + strconv.FormatInt(e.opts.StatementTimeout.Milliseconds(), 10)
	if _, err := conn.Exec(ctx, begin, pgx.QueryExecModeSimpleProtocol); err != nil {
		return nil, err
	}
	table, err := collect(ctx, conn, query, args)
	if _, rbErr := conn.Exec(ctx, "ROLLBACK", pgx.QueryExecModeSimpleProtocol); rbErr != nil && err == nil {
		err = rbErr
	}
	return table, err
}

// collect reads the query's rows into a table, up to its caps.
func collect(ctx context.Context, conn *pgx.Conn, query string, args []any) (*sqlquery.Table, error) {
	rows, err := conn.Query(ctx, query, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	fields := rows.FieldDescriptions()
	columns := make([]string, len(fields))
	for i, f := range fields {
		columns[i] = f.Name
	}
	table := sqlquery.NewTable(columns)
	size := 0
	for rows.Next() {
		values, err := rows.Values()
		if err != nil {
			return nil, err
		}
		for i, v := range values {
			values[i] = datasource.JSONPostgresValue(v, fields[i].DataTypeOID)
		}
		more, err := table.Add(values, &size)
		if err != nil {
			return nil, err
		}
		if !more {
			break
		}
	}
	rows.Close()
	return table, rows.Err()
}

// reset makes the connection as good as new (DISCARD ALL drops session
// settings, temporary tables, prepared statements, advisory locks and
// LISTENs) and reports whether it may go back to the pool. It runs even
// when the run's context ended, on a short clock of its own.
func (e *Executor) reset(ctx context.Context, conn *pgx.Conn) bool {
	if conn.IsClosed() {
		return false
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), gateway.DialTimeout)
	defer cancel()
	if conn.PgConn().TxStatus() != 'I' {
		if _, err := conn.Exec(ctx, "ROLLBACK", pgx.QueryExecModeSimpleProtocol); err != nil {
			return false
		}
	}
	_, err := conn.Exec(ctx, "DISCARD ALL", pgx.QueryExecModeSimpleProtocol)
	return err == nil
}

// classify turns a driver error into what the caller answers. Every failure
// to connect is one answer, as for a data source (datasource.ConnectFailed),
// and no answer quotes the database's own text: the worker's log has it.
func classify(ctx context.Context, err error) error {
	if ctx.Err() != nil {
		return tool.Stopped(ctx)
	}
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		return classifyServerError(err, pgErr)
	}
	var connectErr *pgconn.ConnectError
	var netErr net.Error
	if gateway.IsBlocked(err) || errors.As(err, &connectErr) || pgconn.SafeToRetry(err) || errors.As(err, &netErr) {
		return datasource.ConnectFailed(err)
	}
	return fmt.Errorf("postgres_execute_query: %w", err)
}

func classifyServerError(err error, pgErr *pgconn.PgError) error {
	class := pgErr.Code[:min(2, len(pgErr.Code))]
	switch {
	case pgErr.Code == "57014": // query_canceled: statement_timeout
		return apperr.Wrap(err, apperr.Timeout, "the query took longer than its statement timeout")
	case pgErr.Code == "55P03": // lock_not_available: lock_timeout
		return apperr.Wrap(err, apperr.Timeout, "the query waited longer than its lock timeout")
	case pgErr.Code == "25006": // read_only_sql_transaction
		return apperr.Wrap(err, apperr.Forbidden, "the query tried to change data (SQLSTATE 25006)")
	case pgErr.Code == "42501": // insufficient_privilege
		return apperr.Wrap(err, apperr.Forbidden, "the integration's role may not read what the query reads (SQLSTATE 42501)")
	case class == "22": // data_exception: an argument that does not fit its placeholder, a division by zero
		return apperr.Wrap(err, apperr.Invalid, "the database refused a value (SQLSTATE %s)", pgErr.Code)
	case class == "28", class == "3D": // authorization, unknown database
		return datasource.ConnectFailed(err)
	case class == "08" || class == "53" || class == "57":
		return apperr.Wrap(err, apperr.BadGateway, "the integration's database is unavailable; retry")
	}
	// The stored query itself failed on this database (an unknown column):
	// the tool's error, answered with 200.
	return sqlquery.FailedOnServer("SQLSTATE "+pgErr.Code, err)
}
