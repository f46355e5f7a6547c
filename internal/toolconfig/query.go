package toolconfig

import (
	"strings"
	"unicode"

	"github.com/appruntime/appruntime/internal/apperr"
)

// writeKeywords are words that make a statement change data or schema, run
// procedures, or lock rows; none may appear in a bound query outside string
// literals, quoted identifiers and comments.
var writeKeywords = map[string]bool{
	"insert": true, "update": true, "delete": true, "merge": true, "upsert": true, "into": true,
	"drop": true, "alter": true, "create": true, "truncate": true, "grant": true, "revoke": true,
	"copy": true, "call": true, "exec": true, "execute": true, "do": true, "lock": true,
	"vacuum": true, "set": true, "reset": true, "refresh": true, "reindex": true, "cluster": true,
	"comment": true, "security": true, "declare": true, "prepare": true, "listen": true, "notify": true,
}

// CheckReadOnlyQuery refuses a bound SQL query that is not one SELECT or
// WITH statement (seed 000: no second statement, no data-modifying statement,
// including SELECT … INTO). It is a deliberately simple lexical gate: string
// literals, quoted identifiers and comments are blanked, then the remaining
// words are checked. The executor adds a read-only transaction behind it.
func CheckReadOnlyQuery(query string) error {
	code := blankLiterals(query)
	code = strings.TrimRight(strings.TrimSpace(code), "; \t\r\n")
	if code == "" {
		return apperr.Invalidf("config.query is empty")
	}
	if strings.Contains(code, ";") {
		return apperr.Invalidf("config.query must be one statement: it contains a second one after ';'")
	}
	words := strings.FieldsFunc(strings.ToLower(code), func(r rune) bool {
		return !(unicode.IsLetter(r) || unicode.IsDigit(r) || r == '_' || r == '$' || r == '@' || r == '#')
	})
	if len(words) == 0 || (words[0] != "select" && words[0] != "with") {
		return apperr.Invalidf("config.query must be a SELECT or WITH statement")
	}
	for _, w := range words {
		if writeKeywords[w] {
			return apperr.Invalidf("config.query must be read-only: %s is not allowed", strings.ToUpper(w))
		}
	}
	return nil
}

// blankLiterals replaces the contents of comments, string literals
// ('…', E'…', $tag$…$tag$) and quoted identifiers ("…", […]) with spaces,
// so that neither a keyword nor a ';' inside them counts.
func blankLiterals(q string) string {
	var b strings.Builder
	b.Grow(len(q))
	for i := 0; i < len(q); {
		c := q[i]
		switch {
		case c == '-' && i+1 < len(q) && q[i+1] == '-':
			end := strings.IndexByte(q[i:], '\n')
			if end < 0 {
				end = len(q) - i
			}
			i += end
			b.WriteByte(' ')
		case c == '/' && i+1 < len(q) && q[i+1] == '*':
			end := strings.Index(q[i+2:], "*/")
			if end < 0 {
				i = len(q)
			} else {
				i += end + 4
			}
			b.WriteByte(' ')
		case c == '\'' || c == '"' || c == '[':
			closer := c
			if c == '[' {
				closer = ']'
			}
			j := i + 1
			for j < len(q) {
				if q[j] == '\\' && c == '\'' && i > 0 && (q[i-1] == 'E' || q[i-1] == 'e') {
					j += 2
					continue
				}
				if q[j] == closer {
					if j+1 < len(q) && q[j+1] == closer { // doubled quote: an escaped one
						j += 2
						continue
					}
					break
				}
				j++
			}
			i = j + 1
			b.WriteString(" x ")
		case c == '$':
			tagEnd := strings.IndexByte(q[i+1:], '$')
			tag := ""
			if tagEnd >= 0 {
				tag = q[i : i+tagEnd+2]
			}
			if tag == "" || !isDollarTag(tag) {
				b.WriteByte(c)
				i++
				continue
			}
			end := strings.Index(q[i+len(tag):], tag)
			if end < 0 {
				i = len(q)
			} else {
				i += len(tag) + end + len(tag)
			}
			b.WriteString(" x ")
		default:
			b.WriteByte(c)
			i++
		}
	}
	return b.String()
}

// isDollarTag reports whether s is a dollar-quote delimiter: $$ or $name$.
func isDollarTag(s string) bool {
	inner := s[1 : len(s)-1]
	for i, r := range inner {
		if !(unicode.IsLetter(r) || r == '_' || (i > 0 && unicode.IsDigit(r))) {
			return false
		}
	}
	return true
}
