package models

import (
	"database/sql/driver"
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/google/uuid"
)

// NewID returns a new time-ordered (version 7) UUID string for a primary key.
func NewID() string { return uuid.Must(uuid.NewV7()).String() }

// IsID reports whether s is a UUID in canonical form.
func IsID(s string) bool {
	if len(s) != 36 {
		return false
	}
	_, err := uuid.Parse(s)
	return err == nil
}

// JSON is a JSON document stored in a jsonb (Postgres) or TEXT (SQLite) column.
// The zero value is SQL NULL.
type JSON json.RawMessage

// MustJSON marshals v, panicking on values that cannot be marshalled (a bug).
func MustJSON(v any) JSON {
	b, err := json.Marshal(v)
	if err != nil {
		panic(fmt.Sprintf("models: marshal %T: %v", v, err))
	}
	return JSON(b)
}

// Value implements driver.Valuer. A document that is a bare number goes as
// bytes: SQLite gives a JSON column NUMERIC affinity, which would turn its
// text into a number of its own (12345678901234567890 into a REAL that reads
// back 1.2345678901234567e+19, 1e400 into +Inf, which no scan reads back),
// but stores a blob as it is; Postgres takes the bytes as the jsonb's text.
func (j JSON) Value() (driver.Value, error) {
	if len(j) == 0 {
		return nil, nil
	}
	if isBareNumber(j) {
		return []byte(j), nil
	}
	return string(j), nil
}

// isBareNumber reports whether a document is a number, not a string, an
// array, an object or a literal.
func isBareNumber(j JSON) bool {
	s := strings.TrimLeft(string(j), " \t\r\n")
	return s != "" && (s[0] == '-' || s[0] >= '0' && s[0] <= '9')
}

// Scan implements sql.Scanner for every value either dialect hands back.
// Postgres returns a jsonb as text or bytes; SQLite gives a JSON column
// NUMERIC affinity, so a bare number stored as text before Value sent it as
// bytes ("42", "1.5") comes back as an int64 or a float64, and a raw query
// may yield a bool.
func (j *JSON) Scan(src any) error {
	switch v := src.(type) {
	case nil:
		*j = nil
	case []byte:
		*j = append((*j)[:0], v...)
	case string:
		*j = JSON(v)
	case int64:
		*j = JSON(strconv.FormatInt(v, 10))
	case float64:
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return fmt.Errorf("models: cannot scan %v into JSON", v)
		}
		*j = JSON(strconv.FormatFloat(v, 'g', -1, 64))
	case bool:
		*j = JSON(strconv.FormatBool(v))
	default:
		return fmt.Errorf("models: cannot scan %T into JSON", src)
	}
	return nil
}

// MarshalJSON renders the document itself (null when empty).
func (j JSON) MarshalJSON() ([]byte, error) {
	if len(j) == 0 {
		return []byte("null"), nil
	}
	return j, nil
}

// UnmarshalJSON keeps the raw document.
func (j *JSON) UnmarshalJSON(b []byte) error {
	*j = append((*j)[:0], b...)
	return nil
}

// Decode unmarshals the document into v; an empty document leaves v as it is.
func (j JSON) Decode(v any) error {
	if len(j) == 0 {
		return nil
	}
	return json.Unmarshal(j, v)
}

// GormDataType tells gorm the column family for both dialects' migrations.
func (JSON) GormDataType() string { return "json" }

// Timestamp is a time read by a raw query or computed in one (min(created_at),
// a RETURNING list): Postgres hands it back as a time.Time, SQLite as the
// text it stored, since a computed column has no declared type for the driver
// to parse. The zero value is SQL NULL.
type Timestamp struct{ time.Time }

// sqliteTimeLayouts are the text forms a SQLite database holds a time in: the
// driver's own (Go's time.String without the monotonic part), RFC 3339, and
// SQLite's datetime() forms.
var sqliteTimeLayouts = []string{
	"2006-01-02 15:04:05.999999999-07:00",
	"2006-01-02 15:04:05.999999999 -0700 MST",
	time.RFC3339Nano,
	"2006-01-02T15:04:05.999999999",
	"2006-01-02 15:04:05.999999999",
	"2006-01-02 15:04",
	"2006-01-02",
}

// ParseTimestamp parses s in any of the forms a SQLite database holds a
// time in; a time without a zone is UTC.
func ParseTimestamp(s string) (time.Time, error) {
	s = strings.TrimSpace(s)
	if i := strings.Index(s, " m="); i > 0 { // a time.String() with a monotonic reading
		s = s[:i]
	}
	for _, layout := range sqliteTimeLayouts {
		if t, err := time.Parse(layout, s); err == nil {
			return t.UTC(), nil
		}
	}
	return time.Time{}, fmt.Errorf("models: cannot parse %q as a time", s)
}

// Scan implements sql.Scanner: a time.Time, or its text from SQLite.
func (t *Timestamp) Scan(src any) error {
	switch v := src.(type) {
	case nil:
		t.Time = time.Time{}
	case time.Time:
		t.Time = v.UTC()
	case string:
		p, err := ParseTimestamp(v)
		if err != nil {
			return err
		}
		t.Time = p
	case []byte:
		p, err := ParseTimestamp(string(v))
		if err != nil {
			return err
		}
		t.Time = p
	default:
		return fmt.Errorf("models: cannot scan %T into a time", src)
	}
	return nil
}

// Value implements driver.Valuer.
func (t Timestamp) Value() (driver.Value, error) {
	if t.IsZero() {
		return nil, nil
	}
	return t.Time, nil
}
