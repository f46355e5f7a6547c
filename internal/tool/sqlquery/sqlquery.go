package sqlquery

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/appruntime/appruntime/internal/apperr"
	"github.com/appruntime/appruntime/internal/datasource"
	"github.com/appruntime/appruntime/internal/tool"
)

// Caps and defaults of a query run.
const (
	// MaxRows caps the rows a run returns; the rest are cut and truncated
	// is set.
	MaxRows = 1000
	// MaxOutputBytes caps the JSON of the rows a run returns, the same 1 MiB
	// as any upstream reply; rows past it are cut and truncated is set.
	MaxOutputBytes = 1 << 20
	// MaxArgs bounds the arguments of one query.
	MaxArgs = 100
	// DefaultStatementTimeout bounds the query on the server, well inside
	// the lookup queue's 60 s deadline.
	DefaultStatementTimeout = 30 * time.Second
	// DefaultLockTimeout bounds how long the query waits for a lock.
	DefaultLockTimeout = 5 * time.Second
	// DefaultMaxConns is the pool size per integration.
	DefaultMaxConns = 4
)

// Options configure a SQL tool's executor. Zero values take the defaults.
type Options struct {
	// Guard is what the tool's connections may reach: the data sources'
	// own (DATASOURCE_ALLOW_CIDRS, never the platform's server), since an
	// integration's DSN serves a binding and a SQL tool alike. The zero
	// Guard reaches public addresses only.
	Guard            datasource.Guard
	StatementTimeout time.Duration
	LockTimeout      time.Duration
	MaxConns         int // per integration
}

// WithDefaults fills the zero values of o.
func (o Options) WithDefaults() Options {
	if o.StatementTimeout <= 0 {
		o.StatementTimeout = DefaultStatementTimeout
	}
	if o.LockTimeout <= 0 {
		o.LockTimeout = DefaultLockTimeout
	}
	if o.MaxConns <= 0 {
		o.MaxConns = DefaultMaxConns
	}
	return o
}

// Statement is what a dialect's gate learned of a query it let through.
type Statement struct {
	// Params is the number of placeholders ($n, @pN): the highest n.
	Params int
}

// Prepare returns what a run executes: the configured tool's stored query,
// let through by the dialect's gate (a refusal is a 403: a bundle cannot
// change a stored query), and the input's arguments for its placeholders.
func Prepare(call tool.Call, gate func(query string) (Statement, error)) (string, []any, error) {
	query, err := StoredQuery(call)
	if err != nil {
		return "", nil, err
	}
	st, err := gate(query)
	if err != nil {
		return "", nil, gateError(err)
	}
	args, err := Args(call, st.Params)
	if err != nil {
		return "", nil, err
	}
	return query, args, nil
}

// Refused is the gate's refusal of a query. Reason reads after the query's
// name: "must be one statement: …", so a caller says "config.query
// <reason>" at save time and "the configured query <reason>" at run time.
type Refused struct {
	Reason string
}

func (r *Refused) Error() string { return "query " + r.Reason }

// Refusef returns a Refused whose reason is formatted like fmt.Sprintf.
func Refusef(format string, args ...any) *Refused {
	return &Refused{Reason: fmt.Sprintf(format, args...)}
}

// Settings is a SQL tool's stored config.
type Settings struct {
	Query string `json:"query"`
}

// StoredQuery returns the configured tool's query.
func StoredQuery(call tool.Call) (string, error) {
	var s Settings
	if err := tool.Settings(call, &s); err != nil {
		return "", err
	}
	if strings.TrimSpace(s.Query) == "" {
		return "", apperr.Invalidf("configured tool %q has no query", call.Tool.DisplayName)
	}
	return s.Query, nil
}

// FailedOnServer is the tool's failure for a stored query the database
// refused on its own terms (an unknown column, a division by zero): the
// bundle is told the condition's code, code, never the database's text,
// which can name the database's other tables, columns and values; cause
// keeps the text for the worker's log.
func FailedOnServer(code string, cause error) *tool.Failure {
	return &tool.Failure{Message: "the query failed on the integration's database (" + code + "); the operator's log has the database's message", Cause: cause}
}

// gateError is the run-time error for a stored query the gate refuses: the
// query predates today's gate or was stored around it, and a bundle cannot
// change it, so it is a 403.
func gateError(err error) error {
	if r, ok := err.(*Refused); ok {
		return apperr.Forbiddenf("the configured query %s", r.Reason)
	}
	return err
}

// input is what a bundle supplies to a SQL tool.
type input struct {
	Args []json.RawMessage `json:"args"`
}

// Args decodes input.args, the values of the query's placeholders in order
// ($1… for Postgres, @p1… for SQL Server): strings, numbers, booleans or
// null. want is how many placeholders the query has.
func Args(call tool.Call, want int) ([]any, error) {
	var in input
	if err := tool.DecodeInput(call.Input, &in); err != nil {
		return nil, err
	}
	if len(in.Args) > MaxArgs {
		return nil, apperr.Invalidf("input.args has %d values; at most %d", len(in.Args), MaxArgs)
	}
	if len(in.Args) != want {
		return nil, apperr.Invalidf("the query takes %d argument(s) in input.args, got %d", want, len(in.Args))
	}
	args := make([]any, len(in.Args))
	for i, raw := range in.Args {
		v, err := scalar(raw)
		if err != nil {
			return nil, apperr.Invalidf("input.args[%d] %v", i, err)
		}
		args[i] = v
	}
	return args, nil
}

// scalar decodes one argument: a whole number becomes int64, another number
// float64, so that drivers bind them as numbers.
func scalar(raw json.RawMessage) (any, error) {
	var v any
	dec := json.NewDecoder(strings.NewReader(string(raw)))
	dec.UseNumber()
	if err := dec.Decode(&v); err != nil {
		return nil, fmt.Errorf("is not valid JSON")
	}
	switch x := v.(type) {
	case nil, string, bool:
		return x, nil
	case json.Number:
		if n, err := x.Int64(); err == nil {
			return n, nil
		}
		f, err := x.Float64()
		if err != nil {
			return nil, fmt.Errorf("is a number out of range")
		}
		return f, nil
	}
	return nil, fmt.Errorf("must be a string, number, boolean or null")
}

// Table is a run's output: the shape /read answers with, so a bundle reads
// a tool's rows the way it reads a binding's.
type Table struct {
	Columns   []string `json:"columns"`
	Rows      [][]any  `json:"rows"`
	RowCount  int      `json:"row_count"`
	Truncated bool     `json:"truncated"`
}

// NewTable returns an empty table of columns.
func NewTable(columns []string) *Table {
	return &Table{Columns: columns, Rows: [][]any{}}
}

// Add appends a row unless a cap is reached, in which case it marks the
// table truncated and returns false: the caller stops reading.
func (t *Table) Add(row []any, size *int) (bool, error) {
	if len(t.Rows) == MaxRows {
		t.Truncated = true
		return false, nil
	}
	b, err := json.Marshal(row)
	if err != nil {
		return false, fmt.Errorf("sqlquery: encode row: %w", err)
	}
	if *size+len(b)+1 > MaxOutputBytes {
		t.Truncated = true
		return false, nil
	}
	*size += len(b) + 1
	t.Rows = append(t.Rows, row)
	t.RowCount = len(t.Rows)
	return true, nil
}

// Result renders the table as a run's result; SQL tools bill nothing.
func (t *Table) Result() (tool.Result, error) {
	out, err := json.Marshal(t)
	if err != nil {
		return tool.Result{}, fmt.Errorf("sqlquery: encode table: %w", err)
	}
	return tool.Result{Output: out}, nil
}
