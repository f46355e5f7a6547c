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
// literals, quoted identifiers and comments are blanked the way dialect
// (IntegrationPostgres or IntegrationMSSQL) lexes them, then the remaining
// words are checked. The executor adds a read-only transaction behind it.
func CheckReadOnlyQuery(dialect, query string) error {
	if dialect == IntegrationPostgres {
		// Whether a backslash escapes a quote in a plain '…' literal depends
		// on the server's standard_conforming_strings: the query must pass
		// read either way.
		if err := checkReadOnlyCode(blankLiterals(query, dialect, false)); err != nil {
			return err
		}
		return checkReadOnlyCode(blankLiterals(query, dialect, true))
	}
	return checkReadOnlyCode(blankLiterals(query, dialect, false))
}

// checkReadOnlyCode checks a query whose literals and comments are blanked.
func checkReadOnlyCode(code string) error {
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

// blankLiterals replaces comments, string literals and quoted identifiers
// with spaces, so that neither a keyword nor a ';' inside them counts. Both
// dialects have '…' and "…" (a doubled quote escapes one), -- and nested
// /* */ comments; Postgres adds E'…' (backslash escapes; every '…' when
// backslashEscapes) and $tag$…$tag$, MSSQL […] identifiers. A prefix or a
// '$' that continues an identifier (name'…', x$y$) opens nothing, as in the
// servers' own lexers.
func blankLiterals(q, dialect string, backslashEscapes bool) string {
	pg := dialect == IntegrationPostgres
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
			i = endOfBlockComment(q, i)
			b.WriteByte(' ')
		case c == '\'':
			escapes := pg && (backslashEscapes || (i > 0 && (q[i-1] == 'E' || q[i-1] == 'e') && (i == 1 || !isIdentByte(q[i-2]))))
			i = endOfQuoted(q, i+1, '\'', escapes)
			b.WriteString(" x ")
		case c == '"' || (c == '[' && !pg):
			closer := c
			if c == '[' {
				closer = ']'
			}
			i = endOfQuoted(q, i+1, closer, false)
			b.WriteString(" x ")
		case c == '$' && pg && (i == 0 || !isIdentByte(q[i-1])):
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

// endOfBlockComment returns the index just past the comment opened at i;
// comments nest in both dialects.
func endOfBlockComment(q string, i int) int {
	depth := 0
	for i < len(q) {
		switch {
		case strings.HasPrefix(q[i:], "/*"):
			depth++
			i += 2
		case strings.HasPrefix(q[i:], "*/"):
			depth--
			i += 2
			if depth == 0 {
				return i
			}
		default:
			i++
		}
	}
	return len(q)
}

// endOfQuoted returns the index just past the closer of a quoted run whose
// content starts at j: a doubled closer is an escaped one, and so is a
// backslash-escaped byte when escapes.
func endOfQuoted(q string, j int, closer byte, escapes bool) int {
	for j < len(q) {
		switch {
		case escapes && q[j] == '\\':
			j += 2
		case q[j] == closer && j+1 < len(q) && q[j+1] == closer:
			j += 2
		case q[j] == closer:
			return j + 1
		default:
			j++
		}
	}
	return len(q)
}

// isIdentByte reports whether b may continue an identifier (non-ASCII bytes
// are letters to both servers).
func isIdentByte(b byte) bool {
	return b == '_' || b == '$' || b >= 0x80 || ('0' <= b && b <= '9') || ('a' <= b && b <= 'z') || ('A' <= b && b <= 'Z')
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
