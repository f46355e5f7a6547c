package mssql

import (
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/appruntime/appruntime/internal/tool/sqlquery"
)

// tokenKind is the class of a T-SQL token.
type tokenKind int

const (
	tokWord      tokenKind = iota + 1 // a keyword or a bare identifier: SELECT, dbo, #temp
	tokString                         // '…' or N'…'
	tokQuoted                         // [name] or "name"
	tokVariable                       // @name or @@name
	tokNumber                         // 12, 1.5e3, 0x1F
	tokSemicolon                      // ;
	tokSymbol                         // any other character: ( ) , . = …
)

// token is one token of a query; text is as written.
type token struct {
	kind tokenKind
	text string
	pos  int // byte offset
}

// tokenize splits a T-SQL query into tokens, dropping comments and white
// space. It is strict: an unterminated string, quoted name or comment is an
// error, never something to guess about. Strings escape a quote by doubling
// it ('it”s', no backslash escapes), N'…' is a string, [names] escape ] as
// ]], "names" escape " as "", and /* comments */ nest.
func tokenize(q string) ([]token, error) {
	var out []token
	for i := 0; i < len(q); {
		c := q[i]
		switch {
		case c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v':
			i++
		case strings.HasPrefix(q[i:], "--"):
			end := strings.IndexByte(q[i:], '\n')
			if end < 0 {
				end = len(q) - i
			}
			i += end
		case strings.HasPrefix(q[i:], "/*"):
			end, err := endOfComment(q, i)
			if err != nil {
				return nil, err
			}
			i = end
		case c == '\'' || ((c == 'N' || c == 'n') && i+1 < len(q) && q[i+1] == '\''):
			start := i
			if c != '\'' {
				i++
			}
			end, ok := endOfQuoted(q, i+1, '\'')
			if !ok {
				return nil, sqlquery.Refusef("has an unterminated string starting at byte %d", start)
			}
			out = append(out, token{kind: tokString, text: q[start:end], pos: start})
			i = end
		case c == '[' || c == '"':
			closer := byte(']')
			if c == '"' {
				closer = '"'
			}
			end, ok := endOfQuoted(q, i+1, closer)
			if !ok {
				return nil, sqlquery.Refusef("has an unterminated quoted name starting at byte %d", i)
			}
			out = append(out, token{kind: tokQuoted, text: q[i:end], pos: i})
			i = end
		case c == '@':
			end := endOfWord(q, i+1)
			out = append(out, token{kind: tokVariable, text: q[i:end], pos: i})
			i = end
		case c >= '0' && c <= '9' || (c == '.' && i+1 < len(q) && q[i+1] >= '0' && q[i+1] <= '9'):
			end := i + 1
			for end < len(q) && (isWordByte(q[end]) || q[end] == '.' ||
				((q[end] == '+' || q[end] == '-') && (q[end-1] == 'e' || q[end-1] == 'E'))) {
				end++
			}
			out = append(out, token{kind: tokNumber, text: q[i:end], pos: i})
			i = end
		case c == ';':
			out = append(out, token{kind: tokSemicolon, text: ";", pos: i})
			i++
		case isWordStart(q, i):
			end := endOfWord(q, i)
			out = append(out, token{kind: tokWord, text: q[i:end], pos: i})
			i = end
		default:
			_, size := utf8.DecodeRuneInString(q[i:])
			out = append(out, token{kind: tokSymbol, text: q[i : i+size], pos: i})
			i += size
		}
	}
	return out, nil
}

// endOfComment returns the index just past the (nested) comment opened at i.
func endOfComment(q string, i int) (int, error) {
	start, depth := i, 0
	for i < len(q) {
		switch {
		case strings.HasPrefix(q[i:], "/*"):
			depth++
			i += 2
		case strings.HasPrefix(q[i:], "*/"):
			depth--
			i += 2
			if depth == 0 {
				return i, nil
			}
		default:
			i++
		}
	}
	return 0, sqlquery.Refusef("has an unterminated /* comment starting at byte %d", start)
}

// endOfQuoted returns the index just past the closer of a run whose content
// starts at j; a doubled closer is an escaped one.
func endOfQuoted(q string, j int, closer byte) (int, bool) {
	for j < len(q) {
		if q[j] == closer {
			if j+1 < len(q) && q[j+1] == closer {
				j += 2
				continue
			}
			return j + 1, true
		}
		j++
	}
	return 0, false
}

// isWordStart reports whether a word (keyword or identifier) starts at i: a
// letter, _ or # (a temporary table).
func isWordStart(q string, i int) bool {
	r, _ := utf8.DecodeRuneInString(q[i:])
	return r == '_' || r == '#' || unicode.IsLetter(r)
}

// endOfWord returns the end of the identifier characters from i: letters,
// digits, _, @, # and $.
func endOfWord(q string, i int) int {
	for i < len(q) {
		r, size := utf8.DecodeRuneInString(q[i:])
		if !(r == '_' || r == '@' || r == '#' || r == '$' || unicode.IsLetter(r) || unicode.IsDigit(r)) {
			return i
		}
		i += size
	}
	return i
}

func isWordByte(b byte) bool {
	return b == '_' || ('0' <= b && b <= '9') || ('a' <= b && b <= 'z') || ('A' <= b && b <= 'Z')
}
