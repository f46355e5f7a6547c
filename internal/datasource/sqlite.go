package datasource

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"strconv"
	"strings"
	"sync"
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
	// affinities caches each table's columns' type affinities, by table
	// (sqliteAffinities), for the value checks Postgres's types make.
	affinities sync.Map
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
	if err := s.checkFilters(ctx, q); err != nil {
		return Page{}, err
	}
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
	if err := s.checkValues(ctx, w.Table, w.Values); err != nil {
		return 0, err
	}
	return sqliteWrite(ctx, s.db, w, s.timeout)
}

// Begin implements Source. The transaction lives as long as ctx: the
// driver rolls it back when ctx ends.
func (s *sqliteSource) Begin(ctx context.Context) (Tx, error) {
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return nil, sqliteError(err, nil, s.timeout)
	}
	return &sqliteTx{tx: tx, timeout: s.timeout, src: s}, nil
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
	src     *sqliteSource
}

func (t *sqliteTx) Write(ctx context.Context, w WriteStmt) (int64, error) {
	if err := t.src.checkValues(ctx, w.Table, w.Values); err != nil {
		return 0, err
	}
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

// SQLite stores any value in any column (a column's type is only an
// affinity), where Postgres refuses a value its column's type cannot hold.
// So that the dev mode's data source answers a bundle as a Postgres one does
// (400, `value for column "id" does not fit its type`), a value for a
// column of numeric affinity must be a number, a numeric string or null
// (and, for INTEGER affinity, a whole one), never text like "lots" or a
// boolean.

// sqliteAffinity is a column's type affinity (SQLite's "Determination Of
// Column Affinity"), as far as the checks need it.
type sqliteAffinity uint8

const (
	affinityOther   sqliteAffinity = iota // TEXT, BLOB: anything goes
	affinityInteger                       // a declared type with INT
	affinityNumeric                       // REAL, FLOA, DOUB, or NUMERIC's catch-all
)

func affinityOf(declared string) sqliteAffinity {
	t := strings.ToUpper(declared)
	switch {
	case strings.Contains(t, "INT"):
		return affinityInteger
	case strings.Contains(t, "CHAR"), strings.Contains(t, "CLOB"), strings.Contains(t, "TEXT"),
		strings.Contains(t, "BLOB"), t == "":
		return affinityOther
	}
	return affinityNumeric
}

// columnAffinities returns table's columns' affinities, read once.
func (s *sqliteSource) columnAffinities(ctx context.Context, table string) (map[string]sqliteAffinity, error) {
	if m, ok := s.affinities.Load(table); ok {
		return m.(map[string]sqliteAffinity), nil
	}
	rows, err := s.db.QueryContext(ctx, "SELECT name, type FROM pragma_table_info(?)", table)
	if err != nil {
		return nil, sqliteError(err, nil, s.timeout)
	}
	defer rows.Close()
	m := map[string]sqliteAffinity{}
	for rows.Next() {
		var name, typ string
		if err := rows.Scan(&name, &typ); err != nil {
			return nil, sqliteError(err, nil, s.timeout)
		}
		m[name] = affinityOf(typ)
	}
	if err := rows.Err(); err != nil {
		return nil, sqliteError(err, nil, s.timeout)
	}
	s.affinities.Store(table, m)
	return m, nil
}

// checkFilters checks the values of q's filters against their columns.
func (s *sqliteSource) checkFilters(ctx context.Context, q SelectQuery) error {
	terms, err := parseFilters(q.Filters, q.FixedFilters)
	if err != nil || len(terms) == 0 {
		return err
	}
	cols, err := s.columnAffinities(ctx, q.Table)
	if err != nil {
		return err
	}
	for _, t := range terms {
		if t.op == opLike || t.op == opILike {
			continue // a pattern is text whatever the column
		}
		for _, v := range append([]any{t.value}, t.values...) {
			if !fitsAffinity(cols[t.column], v) {
				return invalidValue(nil, t.column, "does not fit its type")
			}
		}
	}
	return nil
}

// checkValues checks the values a write sets against their columns.
func (s *sqliteSource) checkValues(ctx context.Context, table string, values map[string]any) error {
	cols, err := s.columnAffinities(ctx, table)
	if err != nil {
		return err
	}
	for col, v := range values {
		if !fitsAffinity(cols[col], v) {
			return invalidValue(nil, col, "does not fit its type")
		}
	}
	return nil
}

// fitsAffinity reports whether v may go into (or be compared with) a column
// of affinity a as Postgres would let it into a column of that kind.
func fitsAffinity(a sqliteAffinity, v any) bool {
	if a == affinityOther || v == nil {
		return true
	}
	var text string
	switch x := v.(type) {
	case json.Number:
		text = string(x)
	case string:
		text = strings.TrimSpace(x)
	case float64:
		return a == affinityNumeric || x == math.Trunc(x)
	case float32:
		return a == affinityNumeric || float64(x) == math.Trunc(float64(x))
	case int, int8, int16, int32, int64, uint, uint8, uint16, uint32, uint64:
		return true
	default: // a boolean, or anything else no number column holds
		return false
	}
	if _, err := strconv.ParseInt(text, 10, 64); err == nil {
		return true
	}
	f, err := strconv.ParseFloat(text, 64)
	return err == nil && (a == affinityNumeric || f == math.Trunc(f))
}
