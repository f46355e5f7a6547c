package placeholder

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/appruntime/appruntime/internal/apperr"
)

// JSON fills an http_call's body_template and returns the body to send.
// Keys keep the template's order. A string that is exactly one placeholder
// takes the value with its JSON type (a number stays a number, an object an
// object); a placeholder inside a longer string, or in a key, is filled with
// the value's text. Values are JSON-encoded, so a value can never add a field.
//
// With prune (prune_empty_body_fields), an object key whose value is exactly
// one placeholder that resolved to nothing (absent from the payload, null or
// "") is dropped, at any depth, objects inside arrays included; an array
// element is never dropped (its index carries meaning): there an absent
// value becomes null. Without prune an absent key is a 400, as everywhere.
func JSON(tmpl json.RawMessage, src Source, prune bool) ([]byte, error) {
	dec := json.NewDecoder(bytes.NewReader(tmpl))
	dec.UseNumber()
	tree, err := decodeNode(dec)
	if err == nil {
		if _, end := dec.Token(); end != io.EOF {
			err = errors.New("data after the value")
		}
	}
	if err != nil {
		return nil, templateError("body_template", err)
	}
	f := bodyFiller{src: src, prune: prune}
	filled, _, err := f.fill(tree, false)
	if err != nil {
		return nil, err
	}
	var buf bytes.Buffer
	if err := encodeNode(&buf, filled); err != nil {
		return nil, apperr.Wrap(err, apperr.Invalid, "a payload value cannot be written as JSON")
	}
	return buf.Bytes(), nil
}

// object is a JSON object that keeps its keys' order.
type object struct {
	keys []string
	vals []any
}

// decodeNode reads one JSON value: *object, []any, or a scalar (string,
// json.Number, bool, nil).
func decodeNode(dec *json.Decoder) (any, error) {
	tok, err := dec.Token()
	if err != nil {
		return nil, err
	}
	d, ok := tok.(json.Delim)
	if !ok {
		return tok, nil
	}
	switch d {
	case '{':
		o := &object{}
		for dec.More() {
			kt, err := dec.Token()
			if err != nil {
				return nil, err
			}
			v, err := decodeNode(dec)
			if err != nil {
				return nil, err
			}
			o.keys = append(o.keys, kt.(string))
			o.vals = append(o.vals, v)
		}
		_, err = dec.Token()
		return o, err
	case '[':
		a := []any{}
		for dec.More() {
			v, err := decodeNode(dec)
			if err != nil {
				return nil, err
			}
			a = append(a, v)
		}
		_, err = dec.Token()
		return a, err
	}
	return nil, fmt.Errorf("unexpected %v", d)
}

type bodyFiller struct {
	src   Source
	prune bool
}

// fill fills node; drop reports that it is an object member to leave out.
func (f bodyFiller) fill(node any, inObject bool) (out any, drop bool, err error) {
	switch x := node.(type) {
	case string:
		return f.fillString(x, inObject)
	case *object:
		o := &object{}
		seen := make(map[string]bool, len(x.keys))
		for i, k := range x.keys {
			if strings.Contains(k, "{{") {
				if k, err = f.fillText(k); err != nil {
					return nil, false, err
				}
			}
			v, drop, err := f.fill(x.vals[i], true)
			if err != nil {
				return nil, false, err
			}
			if drop {
				continue
			}
			if seen[k] {
				return nil, false, apperr.Invalidf("body_template: key %q appears twice once filled", k)
			}
			seen[k] = true
			o.keys = append(o.keys, k)
			o.vals = append(o.vals, v)
		}
		return o, false, nil
	case []any:
		a := make([]any, len(x))
		for i, e := range x {
			if a[i], _, err = f.fill(e, false); err != nil {
				return nil, false, err
			}
		}
		return a, false, nil
	}
	return node, false, nil
}

func (f bodyFiller) fillString(s string, inObject bool) (any, bool, error) {
	if !strings.Contains(s, "{{") {
		return s, false, nil
	}
	name, whole := IsWhole(s)
	if !whole {
		v, err := f.fillText(s)
		return v, false, err
	}
	v, ok := f.src.lookup(name)
	nothing := !ok || v == nil || v == ""
	switch {
	case f.prune && nothing && inObject:
		return nil, true, nil
	case f.prune && !ok:
		return nil, false, nil
	case !ok:
		_, err := f.src.value(name)
		return nil, false, err
	}
	return v, false, nil
}

func (f bodyFiller) fillText(s string) (string, error) {
	return fillTemplate(s, "body_template", f.src, nil, nil)
}

// encodeNode writes a filled node as compact JSON, keeping object key order
// and leaving <, > and & unescaped (the body is not HTML).
func encodeNode(buf *bytes.Buffer, node any) error {
	switch x := node.(type) {
	case *object:
		buf.WriteByte('{')
		for i, k := range x.keys {
			if i > 0 {
				buf.WriteByte(',')
			}
			if err := encodeValue(buf, k); err != nil {
				return err
			}
			buf.WriteByte(':')
			if err := encodeNode(buf, x.vals[i]); err != nil {
				return err
			}
		}
		buf.WriteByte('}')
		return nil
	case []any:
		buf.WriteByte('[')
		for i, e := range x {
			if i > 0 {
				buf.WriteByte(',')
			}
			if err := encodeNode(buf, e); err != nil {
				return err
			}
		}
		buf.WriteByte(']')
		return nil
	}
	return encodeValue(buf, node)
}

func encodeValue(buf *bytes.Buffer, v any) error {
	enc := json.NewEncoder(buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return err
	}
	if buf.Len() == 0 || buf.Bytes()[buf.Len()-1] != '\n' {
		return errors.New("placeholder: encoder wrote no value")
	}
	buf.Truncate(buf.Len() - 1)
	return nil
}
