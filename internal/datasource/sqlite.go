package datasource

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	sqlite "github.com/glebarez/go-sqlite" // registers the "sqlite" database/sql driver

	"github.com/appruntime/appruntime/internal/apperr"
)

// SQLite result codes (the low byte of an extended code) sorted by fault.
const (
	sqliteBusy       = 5
	sqliteLocked     = 6
	sqliteConstraint = 19
	sqliteMismatch   = 20
)

// sqliteParams make a writer wait for another's lock instead of failing,
// and let readers run beside a writer.
const sqliteParams = "_pragma=busy_timeout(10000)&_pragma=journal_mode(WAL)&_txlock=immediate"

// sqliteSource is the dev mode's data source: a SQLite file behind the same
// interface as Postgres.
type sqliteSource struct {
	db      *sql.DB
	timeout time.Duration
}

// openSQLite opens the file at path, which must exist: a data source is the
// customer's data, never something this process creates.
func openSQLite(path string, o Options) (*sqliteSource, error) {
	file, _, _ := strings.Cut(strings.TrimPrefix(path, "file:"), "?")
	if _, err := os.Stat(file); err != nil {
		return nil, fmt.Errorf("the SQLite file does not exist or cannot be read")
	}
	dsn := path
	if strings.Contains(dsn, "?") {
		dsn += "&" + sqliteParams
	} else {
		dsn += "?" + sqliteParams
	}
	db, err := sql.Open("sqlite", dsn)
	if err != nil {
		return nil, fmt.Errorf("open sqlite: %w", err)
	}
	return &sqliteSource{db: db, timeout: o.QueryTimeout}, nil
}

func (s *sqliteSource) close() { _ = s.db.Close() }

// Select implements Source.
func (s *sqliteSource) Select(ctx context.Context, q SelectQuery) (Page, error) {
	limit, err := pageLimit(q)
	if err != nil {
		return Page{}, err
	}
	st, args, err := sqliteDialect.buildSelect(q, limit)
	if err != nil {
		return Page{}, err
	}
	ctx, cancel := context.WithTimeout(ctx, s.timeout)
	defer cancel()
	rows, err := s.db.QueryContext(ctx, st.sql, args...)
	if err != nil {
		return Page{}, sqliteError(err, st, s.timeout)
	}
	defer rows.Close()
	page := Page{Columns: q.Columns, Rows: make([][]any, 0, min(limit, 64))}
	dest := make([]any, len(q.Columns))
	for rows.Next() {
		if len(page.Rows) == limit {
			page.HasMore = true
			break
		}
		values := make([]any, len(q.Columns))
		for i := range values {
			dest[i] = &values[i]
		}
		if err := rows.Scan(dest...); err != nil {
			return Page{}, sqliteError(err, st, s.timeout)
		}
		for i, v := range values {
			values[i] = jsonValue(v)
		}
		page.Rows = append(page.Rows, values)
	}
	if err := rows.Close(); err != nil {
		return Page{}, sqliteError(err, st, s.timeout)
	}
	if err := rows.Err(); err != nil {
		return Page{}, sqliteError(err, st, s.timeout)
	}
	return page, nil
}

// Write implements Source.
func (s *sqliteSource) Write(ctx context.Context, w WriteStmt) (int64, error) {
	return sqliteWrite(ctx, s.db, w, s.timeout)
}

// Begin implements Source. The transaction lives as long as ctx: the
// driver rolls it back when ctx ends.
func (s *sqliteSource) Begin(ctx context.Context) (Tx, error) {
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return nil, sqliteError(err, nil, s.timeout)
	}
	return &sqliteTx{tx: tx, timeout: s.timeout}, nil
}

type sqlExecer interface {
	ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
}

func sqliteWrite(ctx context.Context, db sqlExecer, w WriteStmt, timeout time.Duration) (int64, error) {
	st, args, err := sqliteDialect.buildWrite(w)
	if err != nil {
		return 0, err
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	res, err := db.ExecContext(ctx, st.sql, args...)
	if err != nil {
		return 0, sqliteError(err, st, timeout)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return 0, sqliteError(err, st, timeout)
	}
	return n, nil
}

// TxStatus implements Source: SQLite transactions have no names.
func (s *sqliteSource) TxStatus(context.Context, string) (TxOutcome, error) {
	return TxUnknown, nil
}

// ID implements Tx: SQLite cannot name a transaction.
func (t *sqliteTx) ID(context.Context) (string, error) { return "", nil }

type sqliteTx struct {
	tx      *sql.Tx
	timeout time.Duration
}

func (t *sqliteTx) Write(ctx context.Context, w WriteStmt) (int64, error) {
	return sqliteWrite(ctx, t.tx, w, t.timeout)
}

func (t *sqliteTx) Commit(context.Context) error {
	if err := t.tx.Commit(); err != nil {
		return sqliteError(err, nil, t.timeout)
	}
	return nil
}

func (t *sqliteTx) Rollback(context.Context) error {
	err := t.tx.Rollback()
	if err == nil || errors.Is(err, sql.ErrTxDone) {
		return nil
	}
	return sqliteError(err, nil, t.timeout)
}

// SQLite extended result codes of the constraints a row can break.
const (
	sqliteConstraintCheck      = 275
	sqliteConstraintForeignKey = 787
	sqliteConstraintNotNull    = 1299
	sqliteConstraintPrimaryKey = 1555
	sqliteConstraintUnique     = 2067
)

// sqliteError sorts a SQLite error the way postgresError sorts Postgres's;
// st is the statement that failed (nil when none ran).
func sqliteError(err error, st *statement, timeout time.Duration) error {
	var sqlErr *sqlite.Error
	if errors.As(err, &sqlErr) {
		switch sqlErr.Code() & 0xff {
		case sqliteConstraint:
			return sqliteConstraintError(err, sqlErr, st)
		case sqliteMismatch:
			return invalidValue(err, "", "does not fit its column's type")
		case sqliteBusy, sqliteLocked:
			return apperr.Wrap(err, apperr.Unavailable, "data source is busy; retry")
		}
		return apperr.Wrap(err, apperr.BadGateway, msgMismatch)
	}
	switch {
	case errors.Is(err, context.DeadlineExceeded):
		return apperr.Wrap(err, apperr.Timeout, "data source query took longer than %s", timeout)
	case errors.Is(err, sql.ErrConnDone):
		return apperr.Wrap(err, apperr.Unavailable, "data source connection was replaced; retry")
	}
	return fmt.Errorf("datasource: %w", err)
}

// sqliteConstraintError is constraintError for SQLite, whose message lists
// the columns of a NOT NULL or UNIQUE constraint as table.column.
func sqliteConstraintError(err error, sqlErr *sqlite.Error, st *statement) error {
	var cols []string
	if _, list, ok := strings.Cut(sqlErr.Error(), " constraint failed: "); ok {
		list, _, _ = strings.Cut(list, " (")
		for _, c := range strings.Split(list, ", ") {
			_, col, qualified := strings.Cut(c, ".")
			if !qualified {
				col = c
			}
			cols = append(cols, col)
		}
	}
	switch sqlErr.Code() {
	case sqliteConstraintNotNull:
		if len(cols) == 1 && declared(st, cols...) {
			return apperr.Wrap(err, apperr.Invalid, "column %q must not be null", cols[0])
		}
		return apperr.Wrap(err, apperr.Invalid, "the table needs a value for a column this op does not write")
	case sqliteConstraintUnique, sqliteConstraintPrimaryKey:
		if declared(st, cols...) {
			return apperr.Wrap(err, apperr.Invalid, "a row with the same %s already exists", quoteList(cols))
		}
		return apperr.Wrap(err, apperr.Invalid, "the row conflicts with an existing row")
	case sqliteConstraintForeignKey:
		return apperr.Wrap(err, apperr.Invalid, msgForeignKey)
	case sqliteConstraintCheck:
		return apperr.Wrap(err, apperr.Invalid, msgCheck)
	}
	return apperr.Wrap(err, apperr.Invalid, msgRefusedRow)
}
