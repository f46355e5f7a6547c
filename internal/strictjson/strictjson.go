// Package strictjson decodes JSON request bodies strictly (unknown fields,
// duplicate keys and trailing data refused) with messages a client can act
// on, and applies the top-level merge patches of update endpoints.
package strictjson

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"reflect"
	"strings"

	gojson "github.com/goccy/go-json"

	"github.com/appruntime/appruntime/internal/apperr"
)

// Decode unmarshals a request body into v strictly (see Unmarshal); an empty
// body or any decoding problem is an apperr invalid error naming the field.
func Decode(raw []byte, v any) error {
	if len(bytes.TrimSpace(raw)) == 0 {
		return apperr.Invalidf("the request body is empty: send a JSON object")
	}
	if err := Unmarshal(raw, v); err != nil {
		return apperr.Invalidf("%s", err)
	}
	return nil
}

// Unmarshal decodes one JSON value into v, refusing unknown fields, a key
// repeated in one object (whichever copy a reader keeps, two readers may
// disagree), a second value and type mismatches, with an error whose
// message a client can act on ("columns must be an array, not string",
// `unknown field "colums"`, `duplicate key "payload.filters.vendor"`).
// Numbers decoded into untyped fields stay json.Number, so large integers survive.
func Unmarshal(data []byte, v any) error {
	if plain(data) && fastDecode(data, v) == nil {
		return refuseDuplicates(data)
	}
	// The reference decoder decides every other body and words every
	// refusal, from v's zero value rather than from whatever the fast
	// decoder had filled in before it stopped.
	if rv := reflect.ValueOf(v); rv.Kind() == reflect.Pointer && !rv.IsNil() {
		rv.Elem().SetZero()
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	dec.UseNumber()
	if err := dec.Decode(v); err != nil {
		return describe(err)
	}
	// Only JSON white space may follow the value. (Reading the offset is a
	// third cheaper than asking the decoder for one more token.)
	if len(bytes.TrimLeft(data[dec.InputOffset():], " \t\r\n")) != 0 {
		return errors.New("invalid JSON: unexpected data after the value")
	}
	return refuseDuplicates(data)
}

// Try decodes data into v as Unmarshal would and reports whether it did,
// without wording a refusal. On a plain body it trusts the fast decoder's
// refusal, which may refuse what Unmarshal accepts: false means "decide
// with Unmarshal", never "invalid"; true means Unmarshal accepts data and
// v holds what it would decode. For a first pass whose refusal only sends
// the caller down a slower path.
func Try(data []byte, v any) bool {
	if plain(data) {
		return fastDecode(data, v) == nil && duplicateKey(data) == ""
	}
	return Unmarshal(data, v) == nil
}

// fastDecode decodes a plain body (see plain) with goccy/go-json under
// encoding/json's rules: unknown fields refused, numbers into untyped
// fields kept as json.Number. It takes about a third of the reference
// decoder's time on runtime bodies. plain keeps it to the syntax both read
// alike, and FuzzFastDecoder holds it to the reference: it may refuse more
// (the reference then decides), never accept more or decode differently.
func fastDecode(data []byte, v any) error {
	dec := gojson.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	dec.UseNumber()
	return dec.Decode(v)
}

// refuseDuplicates is the error of a JSON value (valid, as the decoder has
// accepted it) with a key repeated in one of its objects, or a string that
// holds U+0000, which no Postgres text or jsonb value can store (the
// platform's tables and a data source's alike would refuse it, deep in a
// write, as the server's error rather than the client's).
func refuseDuplicates(data []byte) error {
	if path := duplicateKey(data); path != "" {
		return fmt.Errorf("invalid JSON: duplicate key %q", strings.TrimPrefix(path, "."))
	}
	if holdsNUL(data) {
		return errors.New(`invalid JSON: a string holds \u0000 (NUL), which cannot be stored`)
	}
	return nil
}

// holdsNUL reports whether a JSON value (valid) has a string with the
// escape \u0000. The text can also be an escaped backslash followed by
// "u0000", which is no NUL: the escape is one when the backslashes that end
// at it are odd in number. (A raw NUL byte is not valid JSON at all.)
func holdsNUL(data []byte) bool {
	const escape = `\u0000`
	for i := bytes.Index(data, []byte(escape)); i >= 0; {
		k := 0
		for j := i; j >= 0 && data[j] == '\\'; j-- {
			k++
		}
		if k%2 == 1 {
			return true
		}
		next := bytes.Index(data[i+1:], []byte(escape))
		if next < 0 {
			return false
		}
		i += 1 + next
	}
	return false
}

// describe turns a decoding error into a message naming what is wrong.
func describe(err error) error {
	var typeErr *json.UnmarshalTypeError
	var syntaxErr *json.SyntaxError
	switch {
	case errors.As(err, &typeErr):
		if typeErr.Field == "" {
			return fmt.Errorf("expected %s, not %s", jsonType(typeErr.Type.String()), typeErr.Value)
		}
		return fmt.Errorf("%s must be %s, not %s", typeErr.Field, jsonType(typeErr.Type.String()), typeErr.Value)
	case errors.As(err, &syntaxErr):
		return fmt.Errorf("invalid JSON at byte %d: %s", syntaxErr.Offset, syntaxErr.Error())
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
		return errors.New("invalid JSON: unexpected end of input")
	}
	msg := strings.TrimPrefix(err.Error(), "json: ")
	if field, ok := strings.CutPrefix(msg, "unknown field "); ok {
		return fmt.Errorf("unknown field %s", field)
	}
	return fmt.Errorf("invalid JSON: %s", msg)
}

// jsonType names a Go type the way a JSON client thinks of it.
func jsonType(goType string) string {
	switch {
	case goType == "string" || strings.HasSuffix(goType, "*string"):
		return "a string"
	case goType == "bool" || strings.HasSuffix(goType, "*bool"):
		return "true or false"
	case strings.Contains(goType, "int") || strings.Contains(goType, "float") || goType == "json.Number":
		return "a number"
	case strings.HasPrefix(goType, "[]") && goType != "[]uint8":
		return "an array"
	case strings.HasPrefix(goType, "map[") || strings.HasPrefix(goType, "struct") || strings.Contains(goType, "."):
		return "an object"
	}
	return "a " + goType
}

// Merge applies a top-level JSON merge patch to current (any value that
// marshals to a JSON object) and returns the merged object: each field the
// patch names replaces current's (nested objects are replaced whole); null
// clears it. The patch must be a JSON object.
func Merge(current any, patch []byte) ([]byte, error) {
	var fields map[string]json.RawMessage
	if err := Decode(patch, &fields); err != nil {
		return nil, err
	}
	if fields == nil {
		return nil, apperr.Invalidf("invalid JSON body: expected an object")
	}
	base, err := json.Marshal(current)
	if err != nil {
		return nil, fmt.Errorf("strictjson: marshal %T: %w", current, err)
	}
	var merged map[string]json.RawMessage
	if err := json.Unmarshal(base, &merged); err != nil {
		return nil, fmt.Errorf("strictjson: %T is not an object: %w", current, err)
	}
	for k, v := range fields {
		if string(bytes.TrimSpace(v)) == "null" {
			delete(merged, k)
			continue
		}
		merged[k] = v
	}
	return json.Marshal(merged)
}

// MergeInto is the PATCH of every admin entity: patch is checked strictly
// against T's fields (Decode), merged over current (Merge), and the result
// decoded into out.
func MergeInto[T any](current T, patch []byte, out *T) error {
	if err := Decode(patch, new(T)); err != nil {
		return err
	}
	merged, err := Merge(current, patch)
	if err != nil {
		return err
	}
	return Decode(merged, out)
}

// IsNull reports whether a raw field is absent or JSON null.
func IsNull(raw json.RawMessage) bool {
	t := bytes.TrimSpace(raw)
	return len(t) == 0 || string(t) == "null"
}

// Object decodes raw as a JSON object; absent or null gives nil. field names
// raw in the error.
func Object(raw json.RawMessage, field string) (map[string]json.RawMessage, error) {
	if IsNull(raw) {
		return nil, nil
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(raw, &m); err != nil || m == nil {
		return nil, apperr.Invalidf("%s must be a JSON object", field)
	}
	if err := refuseDuplicates(raw); err != nil {
		return nil, apperr.Invalidf("%s: %s", field, err)
	}
	return m, nil
}
