package datasource

import (
	"context"
	"errors"
	"fmt"
	"net"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/puddle/v2"

	"github.com/appruntime/appruntime/internal/apperr"
)

// What a caller is told about a data source's failure. The messages name
// only columns the binding declared (the ones the statement names), never
// the database's own text, which can name its other tables, columns,
// constraints and values; that text stays in the error's cause, which the
// API logs for the operator with the request id.
const (
	// msgConnectFailed is the one answer to every failure to connect
	// (address refused by the guard, nothing listening, a timeout, a TLS
	// failure, bad credentials, an unknown database, the platform's own
	// database): telling them apart would make data sources a port scanner.
	msgConnectFailed = "the data source connection failed; the operator's log has the reason"
	msgMismatch      = "the data source rejected the query: the binding does not match the database"
	msgUnavailable   = "the data source is unavailable; retry"
	msgConflict      = "the data source transaction conflicted with another; retry"
	msgCheck         = "a value breaks a check of the table"
	msgForeignKey    = "a value must refer to an existing row"
	msgRefusedRow    = "the data source refused the row"
)

// connectFailed is the generic connection failure with its cause.
func connectFailed(err error) error { return apperr.Wrap(err, apperr.BadGateway, msgConnectFailed) }

// ConnectFailed is the one answer (502) to any failure to connect to a
// customer's database, err its cause for the operator's log: what a data
// source answers, and what a SQL tool on the same integration answers too.
func ConnectFailed(err error) error { return connectFailed(err) }

// postgresError sorts a driver error into a failure to connect (502, one
// message), the client's fault (a value or filter the database refused:
// 400), the data source's state (503, 504) and the binding not matching the
// database (502). st and args are the statement that failed, nil when none
// ran (begin, commit).
func postgresError(err error, st *statement, args []any, timeout time.Duration) error {
	var connectErr *pgconn.ConnectError
	if errors.As(err, &connectErr) {
		return connectFailed(err)
	}
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		return classifyPgError(err, pgErr, st, args, timeout)
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
		return invalidValue(err, col, "does not fit its type")
	}
	var netErr net.Error
	if errors.As(err, &netErr) {
		return connectFailed(err)
	}
	return fmt.Errorf("datasource: %w", err)
}

func classifyPgError(err error, pgErr *pgconn.PgError, st *statement, args []any, timeout time.Duration) error {
	class := pgErr.Code[:min(2, len(pgErr.Code))]
	switch {
	case class == "22": // data_exception: a value the column's type refuses
		phrase := "does not fit its type"
		switch pgErr.Code {
		case "22001": // string_data_right_truncation
			phrase = "is too long for its column"
		case "22003": // numeric_value_out_of_range
			phrase = "is out of range for its column's type"
		}
		return invalidValue(err, valueColumn(pgErr.Message, st, args), phrase)
	case class == "23":
		return constraintError(err, pgErr, st)
	case pgErr.Code == "42883" || pgErr.Code == "42804":
		// undefined_function, datatype_mismatch: at a request's filter, the
		// comparison it asked for does not exist for the column's type
		// (like on an integer, a range on json).
		if st != nil && pgErr.Position > 0 {
			if col, ok := st.filterAt(int(pgErr.Position)); ok {
				return apperr.Wrap(err, apperr.Invalid, "filter %q: this comparison does not apply to the column's type", col)
			}
		}
	case pgErr.Code == "57014": // query_canceled: statement_timeout
		return apperr.Wrap(err, apperr.Timeout, "data source query took longer than %s", timeout)
	case class == "40": // serialization failure, deadlock
		return apperr.Wrap(err, apperr.Unavailable, msgConflict)
	case class == "08" || class == "53" || class == "57":
		return apperr.Wrap(err, apperr.Unavailable, msgUnavailable)
	case class == "28":
		return connectFailed(err)
	}
	// 42 (undefined table or column, privileges) and the rest: the binding
	// or the integration does not match the database.
	return apperr.Wrap(err, apperr.BadGateway, msgMismatch)
}

// invalidValue is a 400 about one value: "value for column "c" <phrase>",
// or "a value <phrase>" when the column is not known.
func invalidValue(err error, col, phrase string) error {
	if col == "" {
		return apperr.Wrap(err, apperr.Invalid, "a value %s", phrase)
	}
	return apperr.Wrap(err, apperr.Invalid, "value for column %q %s", col, phrase)
}

// valueColumn finds the declared column of the argument a database message
// quotes (`invalid input syntax for type integer: "abc"`): the column of
// the one argument whose text it quotes, or "" when none or several do.
func valueColumn(message string, st *statement, args []any) string {
	if st == nil {
		return ""
	}
	found := ""
	for i, a := range args {
		if i >= len(st.argCols) || st.argCols[i] == "" {
			continue
		}
		values, isList := a.([]any)
		if !isList {
			values = []any{a}
		}
		for _, v := range values {
			text, ok := v.(string)
			if !ok || !strings.Contains(message, `"`+text+`"`) {
				continue
			}
			if found != "" && found != st.argCols[i] {
				return ""
			}
			found = st.argCols[i]
		}
	}
	return found
}

// keyColumnsPattern finds the column list of a constraint's detail:
// `Key (a, b)=(1, 2) already exists.`
var keyColumnsPattern = regexp.MustCompile(`^Key \(([^()]*)\)=`)

// constraintError tells which constraint a row broke, naming columns only
// when every one of them is one the statement names.
func constraintError(err error, pgErr *pgconn.PgError, st *statement) error {
	var keyCols []string
	if m := keyColumnsPattern.FindStringSubmatch(pgErr.Detail); m != nil {
		for _, c := range strings.Split(m[1], ",") {
			keyCols = append(keyCols, strings.Trim(strings.TrimSpace(c), `"`))
		}
	}
	switch pgErr.Code {
	case "23502": // not_null_violation
		if declared(st, pgErr.ColumnName) {
			return apperr.Wrap(err, apperr.Invalid, "column %q must not be null", pgErr.ColumnName)
		}
		return apperr.Wrap(err, apperr.Invalid, "the table needs a value for a column this op does not write")
	case "23505", "23P01": // unique_violation, exclusion_violation
		if declared(st, keyCols...) {
			return apperr.Wrap(err, apperr.Invalid, "a row with the same %s already exists", quoteList(keyCols))
		}
		return apperr.Wrap(err, apperr.Invalid, "the row conflicts with an existing row")
	case "23503": // foreign_key_violation
		if strings.Contains(pgErr.Detail, "is still referenced") {
			return apperr.Wrap(err, apperr.Invalid, "the row is still referenced by rows of another table")
		}
		if declared(st, keyCols...) {
			return apperr.Wrap(err, apperr.Invalid, "%s must refer to an existing row", quoteList(keyCols))
		}
		return apperr.Wrap(err, apperr.Invalid, msgForeignKey)
	case "23514": // check_violation
		return apperr.Wrap(err, apperr.Invalid, msgCheck)
	}
	return apperr.Wrap(err, apperr.Invalid, msgRefusedRow)
}

// declared reports whether cols is not empty and every one is a column st
// names.
func declared(st *statement, cols ...string) bool {
	if st == nil || len(cols) == 0 {
		return false
	}
	for _, c := range cols {
		if c == "" || !slices.Contains(st.columns, c) {
			return false
		}
	}
	return true
}

// quoteList renders columns as "a", "b".
func quoteList(cols []string) string {
	q := make([]string, len(cols))
	for i, c := range cols {
		q[i] = strconv.Quote(c)
	}
	return strings.Join(q, ", ")
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
