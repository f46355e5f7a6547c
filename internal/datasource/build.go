package datasource

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/appruntime/appruntime/internal/apperr"
	"github.com/appruntime/appruntime/internal/bindingspec"
)

// maxCachedStatements bounds each dialect's cache of built SQL; shapes past
// it are built on every call rather than evicting the hot ones.
const maxCachedStatements = 4096

// dialect is what differs between the SQL of the two data source kinds. The
// SQL text it builds depends only on identifiers and the shape of a request.
type dialect struct {
	name string
	// quote encloses identifiers: '"' for Postgres; '`' for SQLite, where a
	// double-quoted name that matches no column silently becomes a string.
	quote byte
	// numbered placeholders ($1, $2…) for Postgres; "?" for SQLite.
	numbered bool
	// arrayIn writes IN as "= ANY($n)" with one array argument (Postgres),
	// so every IN filter of a column shares one statement whatever its length.
	arrayIn bool
	ilike   string
	// jsonArgs marshals object and array values to JSON text (SQLite's
	// driver takes no composite values).
	jsonArgs bool

	selects stmtCache
	writes  stmtCache
}

var (
	postgresDialect = &dialect{name: "postgres", quote: '"', numbered: true, arrayIn: true, ilike: " ILIKE "}
	// SQLite's LIKE already ignores ASCII case, so like and ilike agree there.
	sqliteDialect = &dialect{name: "sqlite", quote: '`', ilike: " LIKE ", jsonArgs: true}
)

// statement is built SQL and, for each bound argument, the column it belongs
// to ("" for OFFSET), so a value the driver cannot encode is
// reported against its column. columns and filters let an error the database
// reports be told in terms of the columns the binding declared, never the
// database's own words.
type statement struct {
	sql     string
	argCols []string
	columns []string     // every column the SQL names, as declared
	filters []filterSpan // where each of a request's filters sits in sql
}

// filterSpan is the text of one request filter's condition in a
// statement, in characters (as the database counts an error's position,
// from 1): [start, end).
type filterSpan struct {
	start, end int
	column     string
}

// filterAt returns the request filter whose condition holds character
// position pos (1-based), if any.
func (st *statement) filterAt(pos int) (string, bool) {
	for _, f := range st.filters {
		if pos > f.start && pos <= f.end {
			return f.column, true
		}
	}
	return "", false
}

// stmtCache maps a request shape (see keyBuffer) to its built statement.
type stmtCache struct {
	mu sync.RWMutex
	m  map[string]*statement
}

func (c *stmtCache) get(key []byte) *statement {
	c.mu.RLock()
	st := c.m[string(key)]
	c.mu.RUnlock()
	return st
}

func (c *stmtCache) put(key []byte, st *statement) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.m == nil {
		c.m = make(map[string]*statement)
	}
	if len(c.m) < maxCachedStatements {
		c.m[string(key)] = st
	}
}

var keyBuffers = sync.Pool{New: func() any { b := make([]byte, 0, 256); return &b }}

// appendKeyString appends s length-prefixed, so that no two different lists
// of identifiers share a key.
func appendKeyString(b []byte, s string) []byte {
	b = binary.AppendUvarint(b, uint64(len(s)))
	return append(b, s...)
}

func appendKeyStrings(b []byte, ss []string) []byte {
	b = binary.AppendUvarint(b, uint64(len(ss)))
	for _, s := range ss {
		b = appendKeyString(b, s)
	}
	return b
}

// pageLimit is the page size of q, checked.
func pageLimit(q SelectQuery) (int, error) {
	limit := q.Limit
	if limit == 0 {
		limit = bindingspec.DefaultReadLimit
	}
	if limit < 0 || q.Offset < 0 {
		return 0, apperr.Invalidf("page: limit and offset must not be negative")
	}
	return limit, nil
}

// buildSelect returns the statement and arguments of q, fetching one row
// past the page so the caller learns whether another page follows.
func (d *dialect) buildSelect(q SelectQuery, limit int) (*statement, []any, error) {
	if len(q.Columns) == 0 {
		return nil, nil, errors.New("datasource: select names no columns")
	}
	terms, err := parseFilters(q.Filters, q.FixedFilters)
	if err != nil {
		return nil, nil, err
	}

	kb := keyBuffers.Get().(*[]byte)
	key := append((*kb)[:0], 'S')
	key = appendKeyString(key, q.Table)
	key = appendKeyStrings(key, q.Columns)
	key = binary.AppendUvarint(key, uint64(len(terms)))
	for _, t := range terms {
		key = appendKeyString(key, t.column)
		key = append(key, byte(t.op))
		if t.op == opIn && !d.arrayIn {
			key = binary.AppendUvarint(key, uint64(len(t.values)))
		}
	}
	key = binary.AppendUvarint(key, uint64(len(q.OrderBy)))
	for _, o := range q.OrderBy {
		key = appendKeyString(key, o.Column)
		key = strconv.AppendBool(key, o.Desc)
	}
	key = binary.AppendUvarint(key, uint64(limit))
	key = strconv.AppendBool(key, q.Offset > 0)
	st := d.selects.get(key)
	if st == nil {
		st, err = d.compileSelect(q, terms, limit)
		if err == nil {
			d.selects.put(key, st)
		}
	}
	*kb = key
	keyBuffers.Put(kb)
	if err != nil {
		return nil, nil, err
	}

	args := make([]any, 0, len(st.argCols))
	for _, t := range terms {
		switch t.op {
		case opIsNull, opNotNull:
		case opIn:
			if d.arrayIn {
				list := make([]any, len(t.values))
				for i, v := range t.values {
					list[i] = d.arg(v)
				}
				args = append(args, list)
				continue
			}
			for _, v := range t.values {
				args = append(args, d.arg(v))
			}
		default:
			args = append(args, d.arg(t.value))
		}
	}
	if q.Offset > 0 {
		args = append(args, q.Offset)
	}
	return st, args, nil
}

// compileSelect builds the SQL text of a select shape.
//
// The page size is written into the SQL, and OFFSET only on the pages after
// the first, as a parameter. Postgres plans a prepared statement once for
// every call (a generic plan) only when that plan looks no dearer than
// planning each call with its values; a parameter in LIMIT or OFFSET makes
// the generic plan assume a tenth of the rows or a skip, so every call was
// planned again (about half the database's work on a one-row read). A page
// size is one of at most MaxReadLimit values, and a statement per size is
// cached like any other shape.
func (d *dialect) compileSelect(q SelectQuery, terms []term, limit int) (*statement, error) {
	w := sqlWriter{d: d}
	w.WriteString("SELECT ")
	for i, c := range q.Columns {
		if i > 0 {
			w.WriteString(", ")
		}
		w.ident(c)
	}
	w.WriteString(" FROM ")
	w.table(q.Table)
	for i, t := range terms {
		if i == 0 {
			w.WriteString(" WHERE ")
		} else {
			w.WriteString(" AND ")
		}
		start := w.chars()
		w.condition(t)
		if !t.fixed {
			w.filters = append(w.filters, filterSpan{start: start, end: w.chars(), column: t.column})
		}
	}
	for i, o := range q.OrderBy {
		if i == 0 {
			w.WriteString(" ORDER BY ")
		} else {
			w.WriteString(", ")
		}
		w.ident(o.Column)
		if o.Desc {
			w.WriteString(" DESC")
		} else {
			w.WriteString(" ASC")
		}
	}
	w.WriteString(" LIMIT ")
	w.WriteString(strconv.Itoa(limit + 1))
	if q.Offset > 0 {
		w.WriteString(" OFFSET ")
		w.placeholder("")
	}
	return w.statement()
}

// writeColumns is a write's columns in a stable order: sorted, keys apart.
type writeColumns struct {
	all    []string // every column of Values, sorted
	keys   []string // KeyColumns, in the binding's order
	others []string // all minus keys, sorted
}

// checkWrite validates w against its mode and splits its columns.
func checkWrite(w WriteStmt) (writeColumns, error) {
	var wc writeColumns
	switch w.Mode {
	case bindingspec.ModeInsert, bindingspec.ModeUpdate, bindingspec.ModeUpsert:
	default:
		return wc, fmt.Errorf("datasource: write to %s: unknown mode %q", w.Table, w.Mode)
	}
	if len(w.Values) == 0 {
		return wc, apperr.Invalidf("write to %s: no values", w.Table)
	}
	wc.all = make([]string, 0, len(w.Values))
	for c := range w.Values {
		wc.all = append(wc.all, c)
	}
	slices.Sort(wc.all)
	if w.Mode == bindingspec.ModeInsert {
		return wc, nil
	}
	if len(w.KeyColumns) == 0 {
		return wc, fmt.Errorf("datasource: write to %s: %s without key columns", w.Table, w.Mode)
	}
	for _, k := range w.KeyColumns {
		v, ok := w.Values[k]
		if !ok {
			return wc, apperr.Invalidf("write to %s: key column %q is required", w.Table, k)
		}
		if v == nil {
			return wc, apperr.Invalidf("write to %s: key column %q must not be null", w.Table, k)
		}
	}
	wc.keys = w.KeyColumns
	wc.others = make([]string, 0, len(wc.all))
	for _, c := range wc.all {
		if !slices.Contains(wc.keys, c) {
			wc.others = append(wc.others, c)
		}
	}
	if w.Mode == bindingspec.ModeUpdate && len(wc.others) == 0 {
		return wc, apperr.Invalidf("write to %s: nothing to update besides the key columns", w.Table)
	}
	return wc, nil
}

// buildWrite returns the statement and arguments of w.
func (d *dialect) buildWrite(w WriteStmt) (*statement, []any, error) {
	wc, err := checkWrite(w)
	if err != nil {
		return nil, nil, err
	}
	kb := keyBuffers.Get().(*[]byte)
	key := append((*kb)[:0], 'W')
	key = appendKeyString(key, w.Mode)
	key = appendKeyString(key, w.Table)
	key = appendKeyStrings(key, wc.keys)
	key = appendKeyStrings(key, wc.all)
	st := d.writes.get(key)
	if st == nil {
		st, err = d.compileWrite(w.Table, w.Mode, wc)
		if err == nil {
			d.writes.put(key, st)
		}
	}
	*kb = key
	keyBuffers.Put(kb)
	if err != nil {
		return nil, nil, err
	}
	args := make([]any, len(st.argCols))
	for i, c := range st.argCols {
		args[i] = d.arg(w.Values[c])
	}
	return st, args, nil
}

// compileWrite builds the SQL text of a write shape.
func (d *dialect) compileWrite(table, mode string, wc writeColumns) (*statement, error) {
	w := sqlWriter{d: d}
	if mode == bindingspec.ModeUpdate {
		w.WriteString("UPDATE ")
		w.table(table)
		w.WriteString(" SET ")
		for i, c := range wc.others {
			if i > 0 {
				w.WriteString(", ")
			}
			w.ident(c)
			w.WriteString(" = ")
			w.placeholder(c)
		}
		for i, k := range wc.keys {
			if i == 0 {
				w.WriteString(" WHERE ")
			} else {
				w.WriteString(" AND ")
			}
			w.ident(k)
			w.WriteString(" = ")
			w.placeholder(k)
		}
		return w.statement()
	}

	w.WriteString("INSERT INTO ")
	w.table(table)
	w.WriteString(" (")
	for i, c := range wc.all {
		if i > 0 {
			w.WriteString(", ")
		}
		w.ident(c)
	}
	w.WriteString(") VALUES (")
	for i, c := range wc.all {
		if i > 0 {
			w.WriteString(", ")
		}
		w.placeholder(c)
	}
	w.WriteString(")")
	if mode == bindingspec.ModeUpsert {
		w.WriteString(" ON CONFLICT (")
		for i, k := range wc.keys {
			if i > 0 {
				w.WriteString(", ")
			}
			w.ident(k)
		}
		if len(wc.others) == 0 {
			w.WriteString(") DO NOTHING")
		} else {
			w.WriteString(") DO UPDATE SET ")
			for i, c := range wc.others {
				if i > 0 {
					w.WriteString(", ")
				}
				w.ident(c)
				w.WriteString(" = excluded.")
				w.ident(c)
			}
		}
	}
	return w.statement()
}

// arg prepares a request value for the driver. Numbers go to Postgres as
// text, which the server parses exactly into whatever the column's type is:
// pgx would truncate 1.5 into an integer column (the server refuses it: 400)
// and refuse 5 for a text column (the server stores "5").
func (d *dialect) arg(v any) any {
	switch x := v.(type) {
	case json.Number:
		return string(x)
	case float64:
		if d.numbered {
			return strconv.FormatFloat(x, 'f', -1, 64)
		}
	case int64:
		if d.numbered {
			return strconv.FormatInt(x, 10)
		}
	case int:
		if d.numbered {
			return strconv.Itoa(x)
		}
	case map[string]any, []any:
		if d.jsonArgs {
			b, err := json.Marshal(x)
			if err != nil {
				return fmt.Sprint(x)
			}
			return string(b)
		}
	}
	return v
}

// sqlWriter accumulates SQL text; the first bad identifier is kept as err.
type sqlWriter struct {
	strings.Builder
	d       *dialect
	argCols []string
	columns []string
	filters []filterSpan
	err     error
}

func (w *sqlWriter) statement() (*statement, error) {
	if w.err != nil {
		return nil, w.err
	}
	return &statement{sql: w.String(), argCols: w.argCols, columns: w.columns, filters: w.filters}, nil
}

// chars is the length of the text so far in characters.
func (w *sqlWriter) chars() int { return utf8.RuneCountInString(w.String()) }

// placeholder writes the next parameter marker, for column col.
func (w *sqlWriter) placeholder(col string) {
	w.argCols = append(w.argCols, col)
	if w.d.numbered {
		w.WriteByte('$')
		w.WriteString(strconv.Itoa(len(w.argCols)))
		return
	}
	w.WriteByte('?')
}

// condition writes one filter term.
func (w *sqlWriter) condition(t term) {
	switch t.op {
	case opIsNull:
		w.ident(t.column)
		w.WriteString(" IS NULL")
	case opNotNull:
		w.ident(t.column)
		w.WriteString(" IS NOT NULL")
	case opIn:
		w.ident(t.column)
		if w.d.arrayIn {
			w.WriteString(" = ANY(")
			w.placeholder(t.column)
			w.WriteString(")")
			return
		}
		w.WriteString(" IN (")
		for i := range t.values {
			if i > 0 {
				w.WriteString(", ")
			}
			w.placeholder(t.column)
		}
		w.WriteString(")")
	default:
		w.ident(t.column)
		w.WriteString(comparison(t.op, w.d))
		w.placeholder(t.column)
	}
}

func comparison(op filterOp, d *dialect) string {
	switch op {
	case opEq:
		return " = "
	case opNe:
		return " <> "
	case opLt:
		return " < "
	case opLte:
		return " <= "
	case opGt:
		return " > "
	case opGte:
		return " >= "
	case opLike:
		return " LIKE "
	case opILike:
		return d.ilike
	}
	panic(fmt.Sprintf("datasource: no comparison for op %d", op))
}

// table writes a table name, quoting each part of "schema.table".
func (w *sqlWriter) table(name string) {
	schema, table, qualified := strings.Cut(name, ".")
	if qualified {
		w.quoted(schema)
		w.WriteByte('.')
		w.quoted(table)
		return
	}
	w.quoted(name)
}

// ident writes a column name as a quoted identifier.
func (w *sqlWriter) ident(name string) {
	if !slices.Contains(w.columns, name) {
		w.columns = append(w.columns, name)
	}
	w.quoted(name)
}

// quoted writes name as a quoted identifier. Quoting makes any name one
// identifier: the quote character itself is doubled.
func (w *sqlWriter) quoted(name string) {
	if err := checkIdent(name); err != nil {
		if w.err == nil {
			w.err = err
		}
		return
	}
	q := w.d.quote
	w.WriteByte(q)
	for i := 0; i < len(name); i++ {
		if name[i] == q {
			w.WriteByte(q)
		}
		w.WriteByte(name[i])
	}
	w.WriteByte(q)
}

// checkIdent refuses names no database accepts as an identifier.
func checkIdent(name string) error {
	switch {
	case name == "":
		return apperr.Invalidf("empty identifier")
	case !utf8.ValidString(name), strings.IndexByte(name, 0) >= 0:
		return apperr.Invalidf("identifier %q is not valid", name)
	}
	return nil
}
