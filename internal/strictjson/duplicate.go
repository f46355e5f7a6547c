package strictjson

import (
	"bytes"
	"encoding/json"
	"strconv"
)

// smallObject is how many keys an object may have before duplicateKey
// looks them up in a map rather than comparing each with every other.
const smallObject = 16

// duplicateKey returns the path of the first key that appears twice in one
// object of data ("payload.filters.vendor"), or "" when none does. data
// must hold one valid JSON value (the decoder has accepted it). Keys are
// compared as the decoder reads them: "a" and "\u0061" are the same key.
func duplicateKey(data []byte) string {
	s := scanner{data: data}
	return s.value()
}

// scanner walks valid JSON without building values.
type scanner struct {
	data []byte
	i    int
}

func (s *scanner) skipSpace() {
	for s.i < len(s.data) {
		switch s.data[s.i] {
		case ' ', '\t', '\r', '\n':
			s.i++
		default:
			return
		}
	}
}

// value skips one value and returns the path of a duplicate key in it.
func (s *scanner) value() string {
	s.skipSpace()
	if s.i >= len(s.data) {
		return ""
	}
	switch s.data[s.i] {
	case '{':
		return s.object()
	case '[':
		return s.array()
	case '"':
		s.str()
	default: // a number, true, false or null
		for s.i < len(s.data) && !endsScalar(s.data[s.i]) {
			s.i++
		}
	}
	return ""
}

// endsScalar reports whether c ends a number or a literal.
func endsScalar(c byte) bool {
	switch c {
	case ',', ']', '}', ' ', '\t', '\r', '\n':
		return true
	}
	return false
}

func (s *scanner) array() string {
	s.i++ // [
	for index := 0; ; index++ {
		s.skipSpace()
		if s.data[s.i] == ']' {
			s.i++
			return ""
		}
		if dup := s.value(); dup != "" {
			return "[" + strconv.Itoa(index) + "]" + dup
		}
		s.skipSpace()
		if s.data[s.i] == ',' {
			s.i++
		}
	}
}

func (s *scanner) object() string {
	s.i++ // {
	var keys [smallObject][]byte
	var seen map[string]bool
	n := 0
	for {
		s.skipSpace()
		if s.data[s.i] == '}' {
			s.i++
			return ""
		}
		key := unquoteKey(s.str())
		repeated := false
		switch {
		case seen != nil:
			repeated = seen[string(key)]
			seen[string(key)] = true
		case n < smallObject:
			for _, k := range keys[:n] {
				if bytes.Equal(k, key) {
					repeated = true
				}
			}
			keys[n] = key
			n++
		default:
			seen = make(map[string]bool, 2*smallObject)
			for _, k := range keys {
				seen[string(k)] = true
			}
			repeated = seen[string(key)]
			seen[string(key)] = true
		}
		if repeated {
			return "." + string(key)
		}
		s.skipSpace()
		s.i++ // :
		if dup := s.value(); dup != "" {
			return "." + string(key) + dup
		}
		s.skipSpace()
		if s.data[s.i] == ',' {
			s.i++
		}
	}
}

// str skips a string and returns it with its quotes.
func (s *scanner) str() []byte {
	start := s.i
	s.i++ // "
	for s.i < len(s.data) && s.data[s.i] != '"' {
		if s.data[s.i] == '\\' {
			s.i++
		}
		s.i++
	}
	s.i = min(s.i+1, len(s.data))
	return s.data[start:s.i]
}

// skip skips one value whole. value cannot skip for member: it stops at
// the first repeated key it finds, in the middle of its object.
func (s *scanner) skip() {
	s.skipSpace()
	if s.i >= len(s.data) {
		return
	}
	switch s.data[s.i] {
	case '"':
		s.str()
		return
	case '{', '[':
	default: // a number, true, false or null
		for s.i < len(s.data) && !endsScalar(s.data[s.i]) {
			s.i++
		}
		return
	}
	depth := 0
	for s.i < len(s.data) {
		switch s.data[s.i] {
		case '"':
			s.str()
			continue
		case '{', '[':
			depth++
		case '}', ']':
			if depth--; depth == 0 {
				s.i++
				return
			}
		}
		s.i++
	}
}

// unquoteKey returns a key as the decoder reads it; a key without escapes
// is its own bytes.
func unquoteKey(quoted []byte) []byte {
	inner := quoted[1 : len(quoted)-1]
	if bytes.IndexByte(inner, '\\') < 0 {
		return inner
	}
	var k string
	if err := json.Unmarshal(quoted, &k); err != nil {
		return inner
	}
	return []byte(k)
}

// Lookup returns the raw JSON value at path (a key per nested object) in
// data, which must be one valid JSON value (Unmarshal has accepted it), so
// that a caller can keep part of a request as sent rather than encode what
// it decoded again. ok is false when a key is absent or is not an object's
// key there, and also when an object on the path holds a key that a decoder
// would take for the path's key without being it byte for byte (another
// case, an escape): the caller then encodes the decoded value instead.
func Lookup(data []byte, path ...string) (raw []byte, ok bool) {
	for _, key := range path {
		if data, ok = member(data, key); !ok {
			return nil, false
		}
	}
	return bytes.TrimSpace(data), true
}

// member is the raw value of key in the object data (see Lookup).
func member(data []byte, key string) ([]byte, bool) {
	s := scanner{data: data}
	s.skipSpace()
	if s.i >= len(s.data) || s.data[s.i] != '{' {
		return nil, false
	}
	s.i++ // {
	var found []byte
	for {
		s.skipSpace()
		if s.i < len(s.data) && s.data[s.i] == '}' {
			return found, found != nil
		}
		if s.i >= len(s.data) || s.data[s.i] != '"' {
			return nil, false // not the valid JSON a caller must pass
		}
		quoted := s.str()
		if len(quoted) < 2 {
			return nil, false
		}
		exact := string(quoted[1:len(quoted)-1]) == key
		if !exact && bytes.EqualFold(unquoteKey(quoted), []byte(key)) {
			return nil, false
		}
		s.skipSpace()
		s.i++ // :
		s.skipSpace()
		start := s.i
		s.skip()
		if exact {
			found = s.data[start:min(s.i, len(s.data))]
		}
		s.skipSpace()
		if s.i < len(s.data) && s.data[s.i] == ',' {
			s.i++
		}
	}
}

// PeekString returns the value of key in the JSON object data, before data
// is decoded, when data is plain JSON (see plain) and the value a string
// without escapes; ok is false otherwise (a caller then decodes first). It
// lets a caller choose how to decode data; the decoding still decides
// whether data is accepted.
func PeekString(data []byte, key string) (string, bool) {
	raw, ok := PeekBytes(data, key)
	return string(raw), ok
}

// PeekBytes is PeekString without the copy: the string's bytes are data's
// own, valid as long as data is. A caller that only looks the value up in a
// map (m[string(raw)]) then allocates nothing.
func PeekBytes(data []byte, key string) ([]byte, bool) {
	if !plain(data) {
		return nil, false
	}
	raw, ok := Lookup(data, key)
	if !ok || len(raw) < 2 || raw[0] != '"' || bytes.IndexByte(raw, '\\') >= 0 {
		return nil, false
	}
	return raw[1 : len(raw)-1], true
}
