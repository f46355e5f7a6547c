package datasource

import (
	"database/sql/driver"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgtype"
)

// Layouts of dates and zone-less timestamps in replies; zoned timestamps use
// time.RFC3339Nano.
const (
	dateLayout      = "2006-01-02"
	timestampLayout = "2006-01-02T15:04:05.999999999"
)

// jsonValue turns a value read from a driver into one encoding/json renders
// faithfully: numerics keep their digits (json.Number), uuids, times and
// network addresses become strings, bytes base64, and NaN or infinities
// (which JSON cannot carry) their names.
func jsonValue(v any) any {
	switch x := v.(type) {
	case nil, bool, string, json.Number,
		int, int8, int16, int32, int64, uint, uint8, uint16, uint32, uint64:
		return x
	case float64:
		return jsonFloat(x)
	case float32:
		return jsonFloat(float64(x))
	case time.Time:
		return x.Format(time.RFC3339Nano)
	case []byte:
		return base64.StdEncoding.EncodeToString(x)
	case [16]byte:
		return uuid.UUID(x).String()
	case pgtype.Numeric:
		return jsonNumeric(x)
	case map[string]any:
		for k, e := range x {
			x[k] = jsonValue(e)
		}
		return x
	case []any:
		for i, e := range x {
			x[i] = jsonValue(e)
		}
		return x
	case driver.Valuer:
		dv, err := x.Value()
		if err != nil {
			return fmt.Sprint(x)
		}
		return jsonValue(dv)
	case fmt.Stringer:
		return x.String()
	}
	return v
}

// jsonPostgresValue is jsonValue with the column's type in view: a date has
// no time of day and a timestamp without time zone no offset.
func jsonPostgresValue(v any, oid uint32) any {
	if t, ok := v.(time.Time); ok {
		switch oid {
		case pgtype.DateOID:
			return t.Format(dateLayout)
		case pgtype.TimestampOID:
			return t.Format(timestampLayout)
		case pgtype.TimestamptzOID:
			return t.UTC().Format(time.RFC3339Nano)
		}
	}
	return jsonValue(v)
}

func jsonFloat(f float64) any {
	switch {
	case math.IsNaN(f):
		return "NaN"
	case math.IsInf(f, 1):
		return "Infinity"
	case math.IsInf(f, -1):
		return "-Infinity"
	}
	return f
}

func jsonNumeric(n pgtype.Numeric) any {
	if !n.Valid {
		return nil
	}
	b, err := n.MarshalJSON()
	if err != nil {
		return nil
	}
	if len(b) > 0 && b[0] == '"' { // NaN and the infinities
		s, _ := strconv.Unquote(string(b))
		return s
	}
	return json.Number(b)
}

// JSONPostgresValue renders a value pgx read from a column of type oid the
// way the data source's replies do, for other readers of Postgres rows (the
// postgres_execute_query tool).
func JSONPostgresValue(v any, oid uint32) any { return jsonPostgresValue(v, oid) }

// JSONValue renders a value read from a database/sql driver the way the
// data source's replies do, for other readers of rows (the
// mssql_execute_query tool).
func JSONValue(v any) any { return jsonValue(v) }
