package mssql

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"time"

	mssqldb "github.com/microsoft/go-mssqldb"

	"github.com/appruntime/appruntime/internal/apperr"
	"github.com/appruntime/appruntime/internal/crypt"
	"github.com/appruntime/appruntime/internal/datasource"
	"github.com/appruntime/appruntime/internal/gateway"
	"github.com/appruntime/appruntime/internal/tool"
	"github.com/appruntime/appruntime/internal/tool/sqlquery"
)

// IntegrationKind is the integration kind whose DSN the tool connects with.
const IntegrationKind = "mssql"

// Options configure the executor.
type Options = sqlquery.Options

// Executor runs mssql_execute_query. It is safe for concurrent use; Close
// ends its pools.
type Executor struct {
	opts  Options
	pools *sqlquery.Pools[*sql.DB]
}

// New returns an executor that opens integration secrets with box.
func New(box *crypt.Box, opts Options) *Executor {
	e := &Executor{opts: opts.WithDefaults()}
	e.pools = sqlquery.NewPools(box, IntegrationKind, e.openPool, func(db *sql.DB) { _ = db.Close() })
	return e
}

// Close closes every pool.
func (e *Executor) Close() { e.pools.Close() }

// openPool builds a pool on dsn. It does not dial.
func (e *Executor) openPool(dsn string) (*sql.DB, error) {
	connector, err := mssqldb.NewConnector(dsn)
	if err != nil {
		// The parse error may quote the DSN, password included.
		return nil, errors.New("the DSN is not a valid SQL Server connection string")
	}
	// Every dial (the SQL Browser's UDP lookup of a named instance included,
	// which the guard refuses as a network other than TCP) goes through the
	// data sources' guard; the driver resolves names itself and dials the
	// addresses.
	connector.Dialer = e.opts.Guard.Dialer()
	// Runs after every connect and every reset (sp_reset_connection, which
	// the driver sends before a pooled connection is used again).
	connector.SessionInitSQL = "SET LOCK_TIMEOUT " + strconv.FormatInt(e.opts.LockTimeout.Milliseconds(), 10) +
		"; SET IMPLICIT_TRANSACTIONS OFF; SET XACT_ABORT ON"
	db := sql.OpenDB(connector)
	db.SetMaxOpenConns(e.opts.MaxConns)
	db.SetMaxIdleConns(e.opts.MaxConns)
	db.SetConnMaxIdleTime(5 * time.Minute)
	return db, nil
}

// Run implements tool.Executor.
func (e *Executor) Run(ctx context.Context, call tool.Call) (tool.Result, error) {
	query, args, err := sqlquery.Prepare(call, Check)
	if err != nil {
		return tool.Result{}, err
	}
	db, err := e.pools.Get(call.Integration)
	if err != nil {
		return tool.Result{}, err
	}
	// SQL Server has no statement timeout setting: the driver cancels the
	// statement (a TDS attention) when this context ends.
	qctx, cancel := context.WithTimeout(ctx, e.opts.StatementTimeout)
	defer cancel()
	table, err := rolledBack(qctx, db, query, args)
	if err != nil {
		return tool.Result{}, classify(ctx, qctx, err)
	}
	return table.Result()
}

// rolledBack runs query in a transaction that it always rolls back.
func rolledBack(ctx context.Context, db *sql.DB, query string, args []any) (*sqlquery.Table, error) {
	tx, err := db.BeginTx(ctx, &sql.TxOptions{Isolation: sql.LevelReadCommitted})
	if err != nil {
		return nil, err
	}
	defer func() { _ = tx.Rollback() }()
	rows, err := tx.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	columns, err := rows.Columns()
	if err != nil {
		return nil, err
	}
	table := sqlquery.NewTable(columns)
	size := 0
	values := make([]any, len(columns))
	ptrs := make([]any, len(columns))
	for rows.Next() {
		for i := range values {
			ptrs[i] = &values[i]
		}
		if err := rows.Scan(ptrs...); err != nil {
			return nil, err
		}
		row := make([]any, len(values))
		for i, v := range values {
			row[i] = datasource.JSONValue(v)
		}
		more, err := table.Add(row, &size)
		if err != nil {
			return nil, err
		}
		if !more {
			break
		}
	}
	if err := rows.Close(); err != nil {
		return nil, err
	}
	return table, rows.Err()
}

// SQL Server error numbers the classification names.
const (
	errLockTimeout      = 1222
	errPermission       = 229
	errPermissionSchema = 230
	errConversion       = 245
	errDivideByZero     = 8134
	errLoginFailed      = 18456
)

// classify turns a driver error into what the caller answers; qctx is the
// run's context bounded by the statement timeout. Every failure to connect
// is one answer, as for a data source (datasource.ConnectFailed), and no
// answer quotes the server's own text: the worker's log has it.
func classify(ctx, qctx context.Context, err error) error {
	if ctx.Err() != nil {
		return tool.Stopped(ctx)
	}
	if qctx.Err() != nil {
		return apperr.Wrap(err, apperr.Timeout, "the query took longer than its statement timeout")
	}
	if gateway.IsBlocked(err) {
		return datasource.ConnectFailed(err)
	}
	var msErr mssqldb.Error
	if errors.As(err, &msErr) {
		switch msErr.Number {
		case errLockTimeout:
			return apperr.Wrap(err, apperr.Timeout, "the query waited longer than its lock timeout")
		case errPermission, errPermissionSchema:
			return apperr.Wrap(err, apperr.Forbidden, "the integration's login may not read what the query reads (error %d)", msErr.Number)
		case errConversion, errDivideByZero:
			return apperr.Wrap(err, apperr.Invalid, "the database refused a value (error %d)", msErr.Number)
		case errLoginFailed:
			return datasource.ConnectFailed(err)
		}
		return sqlquery.FailedOnServer("error "+strconv.Itoa(int(msErr.Number)), err)
	}
	var netErr net.Error
	var opErr *net.OpError
	if errors.As(err, &netErr) || errors.As(err, &opErr) || errors.Is(err, sql.ErrConnDone) ||
		errors.Is(err, driver.ErrBadConn) || errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		return datasource.ConnectFailed(err)
	}
	return fmt.Errorf("mssql_execute_query: %w", err)
}

// TestConnection connects once to dsn as the tool's pools do, through the
// guard (the admin's "test connection"), and says in the product's words why
// it could not: a DSN that does not parse (400), an address the guard
// refuses (400), a login the server refused, or a server it could not reach
// within timeout (502). No message quotes the DSN or the server's text.
func TestConnection(ctx context.Context, guard datasource.Guard, dsn string, timeout time.Duration) error {
	connector, err := mssqldb.NewConnector(dsn)
	if err != nil {
		return apperr.Invalidf("secrets.dsn: the DSN is not a valid SQL Server connection string")
	}
	connector.Dialer = guard.Dialer()
	db := sql.OpenDB(connector)
	defer func() { _ = db.Close() }()
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	err = db.PingContext(ctx)
	var msErr mssqldb.Error
	switch {
	case err == nil:
		return nil
	case gateway.IsBlocked(err):
		return apperr.Wrap(err, apperr.Invalid, "%s", gateway.BlockedReason)
	case errors.As(err, &msErr) && msErr.Number == errLoginFailed:
		return apperr.Wrap(err, apperr.BadGateway, "the server refused the DSN's login (error %d)", msErr.Number)
	case errors.As(err, &msErr):
		return apperr.Wrap(err, apperr.BadGateway, "the server refused the connection (error %d)", msErr.Number)
	case ctx.Err() != nil:
		return apperr.Wrap(err, apperr.BadGateway, "the server did not answer within %s", timeout)
	}
	return apperr.Wrap(err, apperr.BadGateway, "could not connect to the DSN's host and port (down, not listening, or not open to this network)")
}
