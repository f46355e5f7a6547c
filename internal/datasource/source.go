package datasource

import (
	"context"
	"time"

	"github.com/appruntime/appruntime/internal/bindingspec"
)

// Integration kinds served as data sources.
const (
	KindPostgres = "postgres" // DSN postgres://…; a pgx pool per integration
	KindSQLite   = "sqlite"   // DSN is a file path; the dev mode's demo only
)

// QueryTimeout bounds one statement on a data source, so a slow customer
// database cannot hold a request (and its pool connection) indefinitely.
const QueryTimeout = 10 * time.Second

// MaxInValues bounds the values of one IN filter; it keeps statements (and
// the statement cache) of a sane size.
const MaxInValues = 1000

// Source is one data source: the customer's tables behind an integration.
// Identifiers in queries must be the ones the binding declared; the caller
// checks a request against the binding before calling. Values are always
// bound, never part of the SQL text.
type Source interface {
	// Select reads one page. Bad filter shapes and values the database
	// rejects are apperr.Invalid.
	Select(ctx context.Context, q SelectQuery) (Page, error)
	// Write runs one insert, update or upsert and returns the rows affected.
	Write(ctx context.Context, w WriteStmt) (int64, error)
	// Begin starts a transaction for an action's writes. The caller must
	// end it with Commit or Rollback.
	Begin(ctx context.Context) (Tx, error)
	// TxStatus tells what became of the transaction Tx.ID named: whether
	// it committed, even when its commit's answer was lost (a crashed
	// process, a broken connection).
	TxStatus(ctx context.Context, id string) (TxOutcome, error)
}

// TxOutcome is what became of a transaction (Source.TxStatus).
type TxOutcome string

// Transaction outcomes.
const (
	TxCommitted  TxOutcome = "committed"
	TxAborted    TxOutcome = "aborted"
	TxInProgress TxOutcome = "in progress"
	// TxUnknown: the source cannot tell (a transaction too old for its
	// commit log, or a source that does not name transactions).
	TxUnknown TxOutcome = "unknown"
)

// Tx is a transaction on a Source: several writes committed together.
type Tx interface {
	// Write is Source.Write inside the transaction.
	Write(ctx context.Context, w WriteStmt) (int64, error)
	// Commit makes the writes durable; a deferred constraint it violates is
	// apperr.Invalid like any refused value.
	Commit(ctx context.Context) error
	// Rollback discards the writes; after Commit it does nothing, so it can
	// always be deferred.
	Rollback(ctx context.Context) error
	// ID names the transaction for Source.TxStatus (on Postgres its
	// transaction id, assigned now). "" when the source cannot name
	// transactions (SQLite, the dev mode's demo).
	ID(ctx context.Context) (string, error)
}

// SelectQuery is one page of a read op.
type SelectQuery struct {
	Table   string   // may be schema-qualified ("sales.invoices")
	Columns []string // selected, in this order
	// Filters are the request's filters, column → value: a scalar means
	// equality, an array IN, null IS NULL, and an object the operator form
	// {"op": "eq|ne|lt|lte|gt|gte|like|ilike|in|is_null", "value": …}.
	Filters map[string]any
	// FixedFilters are the binding's filters (placeholders already
	// resolved), in the same forms; they are ANDed with Filters, so a request
	// can narrow a read but never widen it.
	FixedFilters map[string]any
	OrderBy      []bindingspec.Order
	Limit        int // rows per page; 0 means bindingspec.DefaultReadLimit
	Offset       int
}

// Page is the result of a Select. Values are JSON-friendly: numerics are
// json.Number, uuids and timestamps strings, bytes base64.
type Page struct {
	Columns []string
	Rows    [][]any
	// HasMore reports that at least one row follows this page.
	HasMore bool
}

// WriteStmt is one row written by a write op.
type WriteStmt struct {
	Table string
	Mode  string // bindingspec.ModeInsert, ModeUpdate or ModeUpsert
	// KeyColumns identify the row for update and upsert (the conflict target);
	// their values must be in Values.
	KeyColumns []string
	// Values are column → value, the binding's fixed values included.
	Values map[string]any
}
