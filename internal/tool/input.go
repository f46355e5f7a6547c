package tool

import (
	"bytes"
	"encoding/json"
	"reflect"
	"strings"

	gojson "github.com/goccy/go-json"

	"github.com/appruntime/appruntime/internal/apperr"
	"github.com/appruntime/appruntime/internal/strictjson"
)

// DecodeInput decodes the keys of a call's input that v (a pointer to a
// struct with json tags) declares. Other keys are ignored: an input always
// carries the session's ids, and the binding decides which keys a bundle may
// send. A key of the wrong type is a 400 naming it ("input.texts must be an
// array, not string").
func DecodeInput(raw json.RawMessage, v any) error {
	fields, err := InputObject(raw)
	if err != nil {
		return err
	}
	rv := reflect.ValueOf(v).Elem()
	rt := rv.Type()
	for i := range rt.NumField() {
		name, _, _ := strings.Cut(rt.Field(i).Tag.Get("json"), ",")
		if name == "" || name == "-" {
			continue
		}
		value, ok := fields[name]
		if !ok || strictjson.IsNull(value) {
			continue
		}
		if err := strictjson.Unmarshal(value, rv.Field(i).Addr().Interface()); err != nil {
			return apperr.Invalidf("input.%s: %v", name, err)
		}
	}
	return nil
}

// InputObject decodes a call's input as a JSON object; an empty input is an
// empty object.
func InputObject(raw json.RawMessage) (map[string]json.RawMessage, error) {
	if len(bytes.TrimSpace(raw)) == 0 {
		return map[string]json.RawMessage{}, nil
	}
	var fields map[string]json.RawMessage
	// An input is read on every run, and the api decoded it strictly
	// already: goccy/go-json reads it in a fraction of encoding/json's time;
	// whatever it refuses, encoding/json decides.
	if gojson.Unmarshal(raw, &fields) == nil && fields != nil {
		return fields, nil
	}
	fields = nil
	if err := json.Unmarshal(raw, &fields); err != nil || fields == nil {
		return nil, apperr.Invalidf("the tool's input must be a JSON object")
	}
	return fields, nil
}
