package models

import (
	"database/sql/driver"
	"encoding/json"
	"fmt"

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

// Value implements driver.Valuer.
func (j JSON) Value() (driver.Value, error) {
	if len(j) == 0 {
		return nil, nil
	}
	return string(j), nil
}

// Scan implements sql.Scanner.
func (j *JSON) Scan(src any) error {
	switch v := src.(type) {
	case nil:
		*j = nil
	case []byte:
		*j = append((*j)[:0], v...)
	case string:
		*j = JSON(v)
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
