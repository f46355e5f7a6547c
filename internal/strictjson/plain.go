package strictjson

import "unicode/utf8"

// maxPlainDepth bounds the nesting plain accepts; deeper bodies take the
// reference decoder.
const maxPlainDepth = 64

// plain reports whether data is one JSON value in the plain subset the fast
// decoder is trusted with: strict RFC 8259 syntax, valid UTF-8, strings
// without control characters or \u escapes, numbers of at most 15 digits
// without an exponent, and white space around it. Anything else (it may
// still be valid JSON) is decided by encoding/json.
func plain(data []byte) bool {
	p := plainScanner{data: data}
	p.space()
	if !p.value(0) {
		return false
	}
	p.space()
	return p.i == len(data)
}

type plainScanner struct {
	data []byte
	i    int
}

func (p *plainScanner) space() {
	for p.i < len(p.data) {
		switch p.data[p.i] {
		case ' ', '\t', '\r', '\n':
			p.i++
		default:
			return
		}
	}
}

func (p *plainScanner) value(depth int) bool {
	if p.i >= len(p.data) || depth > maxPlainDepth {
		return false
	}
	switch c := p.data[p.i]; {
	case c == '{':
		return p.object(depth + 1)
	case c == '[':
		return p.array(depth + 1)
	case c == '"':
		return p.str()
	case c == '-' || c >= '0' && c <= '9':
		return p.number()
	case c == 't':
		return p.literal("true")
	case c == 'f':
		return p.literal("false")
	case c == 'n':
		return p.literal("null")
	}
	return false
}

func (p *plainScanner) literal(word string) bool {
	if len(p.data)-p.i < len(word) || string(p.data[p.i:p.i+len(word)]) != word {
		return false
	}
	p.i += len(word)
	return true
}

func (p *plainScanner) object(depth int) bool {
	p.i++ // {
	p.space()
	if p.i < len(p.data) && p.data[p.i] == '}' {
		p.i++
		return true
	}
	for {
		if p.i >= len(p.data) || p.data[p.i] != '"' || !p.str() {
			return false
		}
		p.space()
		if p.i >= len(p.data) || p.data[p.i] != ':' {
			return false
		}
		p.i++
		p.space()
		if !p.value(depth) {
			return false
		}
		p.space()
		if p.i >= len(p.data) {
			return false
		}
		switch p.data[p.i] {
		case ',':
			p.i++
			p.space()
		case '}':
			p.i++
			return true
		default:
			return false
		}
	}
}

func (p *plainScanner) array(depth int) bool {
	p.i++ // [
	p.space()
	if p.i < len(p.data) && p.data[p.i] == ']' {
		p.i++
		return true
	}
	for {
		if !p.value(depth) {
			return false
		}
		p.space()
		if p.i >= len(p.data) {
			return false
		}
		switch p.data[p.i] {
		case ',':
			p.i++
			p.space()
		case ']':
			p.i++
			return true
		default:
			return false
		}
	}
}

// str accepts a string of valid UTF-8 without control characters whose
// escapes are the two-character ones.
func (p *plainScanner) str() bool {
	p.i++ // "
	for p.i < len(p.data) {
		c := p.data[p.i]
		switch {
		case c == '"':
			p.i++
			return true
		case c == '\\':
			if p.i+1 >= len(p.data) {
				return false
			}
			switch p.data[p.i+1] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				p.i += 2
			default:
				return false
			}
		case c < 0x20:
			return false
		case c < utf8.RuneSelf:
			p.i++
		default:
			r, size := utf8.DecodeRune(p.data[p.i:])
			if r == utf8.RuneError && size <= 1 {
				return false
			}
			p.i += size
		}
	}
	return false
}

// number accepts -?(0|[1-9][0-9]*)(\.[0-9]+)? with at most 15 digits.
func (p *plainScanner) number() bool {
	if p.data[p.i] == '-' {
		p.i++
	}
	digits := 0
	start := p.i
	for p.i < len(p.data) && p.data[p.i] >= '0' && p.data[p.i] <= '9' {
		p.i++
	}
	intDigits := p.i - start
	if intDigits == 0 || intDigits > 1 && p.data[start] == '0' {
		return false
	}
	digits += intDigits
	if p.i < len(p.data) && p.data[p.i] == '.' {
		p.i++
		start = p.i
		for p.i < len(p.data) && p.data[p.i] >= '0' && p.data[p.i] <= '9' {
			p.i++
		}
		if p.i == start {
			return false
		}
		digits += p.i - start
	}
	if p.i < len(p.data) && (p.data[p.i] == 'e' || p.data[p.i] == 'E') {
		return false
	}
	return digits <= 15
}
