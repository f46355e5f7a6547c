package mssql

import (
	"regexp"
	"strconv"
	"strings"

	"github.com/appruntime/appruntime/internal/tool/sqlquery"
)

// deniedWords may not appear as bare words anywhere in a query (inside a
// string or a [quoted] name they are text, not keywords), grouped by why.
var deniedWords = wordReasons([]struct {
	why   string
	words []string
}{
	{"changes data", []string{"INSERT", "UPDATE", "DELETE", "MERGE", "TRUNCATE", "WRITETEXT", "UPDATETEXT", "BULK"}},
	{"creates a table (SELECT … INTO)", []string{"INTO"}},
	{"changes the schema or permissions", []string{"CREATE", "ALTER", "DROP", "GRANT", "REVOKE", "DENY"}},
	{"runs code this check never sees", []string{"EXEC", "EXECUTE", "SP_EXECUTESQL"}},
	{"reaches another server or a file", []string{"OPENROWSET", "OPENDATASOURCE", "OPENQUERY"}},
	{"changes the session", []string{"DECLARE", "SET", "USE"}},
	{"controls the transaction", []string{"BEGIN", "COMMIT", "ROLLBACK", "SAVE", "TRAN", "TRANSACTION"}},
	{"is a server administration command", []string{"DBCC", "BACKUP", "RESTORE", "KILL", "SHUTDOWN", "RECONFIGURE", "CHECKPOINT"}},
	{"only holds a connection", []string{"WAITFOR"}},
	{"locks rows", []string{"UPDLOCK", "XLOCK", "HOLDLOCK", "TABLOCK", "TABLOCKX", "PAGLOCK", "SERIALIZABLE", "REPEATABLEREAD", "READCOMMITTEDLOCK"}},
	{"separates batches", []string{"GO"}},
})

func wordReasons(groups []struct {
	why   string
	words []string
}) map[string]string {
	m := map[string]string{}
	for _, g := range groups {
		for _, w := range g.words {
			m[w] = g.why
		}
	}
	return m
}

// placeholder is a positional parameter as go-mssqldb names them.
var placeholder = regexp.MustCompile(`(?i)^@p([1-9][0-9]*)$`)

// Check lets through exactly one SELECT or WITH statement that changes
// nothing, read by a strict tokenizer: no second statement or batch (a ';'
// anywhere but at the end, a GO), no denied word outside strings and quoted
// names, no sequence (NEXT VALUE FOR), no variable but the @p1… placeholders
// and @@ functions. A refusal is a *sqlquery.Refused.
func Check(query string) (sqlquery.Statement, error) {
	tokens, err := tokenize(query)
	if err != nil {
		return sqlquery.Statement{}, err
	}
	// Leading and trailing semicolons end nothing (";WITH" is a common habit).
	for len(tokens) > 0 && tokens[0].kind == tokSemicolon {
		tokens = tokens[1:]
	}
	for len(tokens) > 0 && tokens[len(tokens)-1].kind == tokSemicolon {
		tokens = tokens[:len(tokens)-1]
	}
	if len(tokens) == 0 {
		return sqlquery.Statement{}, sqlquery.Refusef("is empty")
	}
	first := 0
	for first < len(tokens) && tokens[first].text == "(" {
		first++
	}
	if first == len(tokens) || tokens[first].kind != tokWord ||
		(!strings.EqualFold(tokens[first].text, "SELECT") && !strings.EqualFold(tokens[first].text, "WITH")) {
		what := "this"
		if first < len(tokens) {
			what = strings.ToUpper(tokens[first].text)
		}
		return sqlquery.Statement{}, sqlquery.Refusef("must be a SELECT or WITH statement, not %s", what)
	}
	var st sqlquery.Statement
	for i, tok := range tokens {
		switch tok.kind {
		case tokSemicolon:
			return sqlquery.Statement{}, sqlquery.Refusef("must be one statement: it goes on after the ';' at byte %d", tok.pos)
		case tokWord:
			word := strings.ToUpper(tok.text)
			if why, ok := deniedWords[word]; ok {
				return sqlquery.Statement{}, sqlquery.Refusef("must be read-only: %s %s", word, why)
			}
			if word == "NEXT" && i+2 < len(tokens) && strings.EqualFold(tokens[i+1].text, "VALUE") && strings.EqualFold(tokens[i+2].text, "FOR") {
				return sqlquery.Statement{}, sqlquery.Refusef("must be read-only: NEXT VALUE FOR changes a sequence")
			}
		case tokVariable:
			if strings.HasPrefix(tok.text, "@@") {
				continue
			}
			m := placeholder.FindStringSubmatch(tok.text)
			if m == nil {
				return sqlquery.Statement{}, sqlquery.Refusef("may not use the variable %s: only the placeholders @p1, @p2… are bound", tok.text)
			}
			if n, err := strconv.Atoi(m[1]); err == nil && n > st.Params {
				st.Params = n
			}
		}
	}
	return st, nil
}
