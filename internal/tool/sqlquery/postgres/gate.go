package postgres

import (
	"encoding/json"
	"slices"
	"strings"
	"unicode"

	pgquery "github.com/pganalyze/pg_query_go/v6"

	"github.com/appruntime/appruntime/internal/tool/sqlquery"
)

// Check lets through exactly one SELECT or WITH statement that changes
// nothing: no second statement; no INSERT, UPDATE, DELETE or MERGE anywhere
// (a writable CTE included); no SELECT … INTO; no locking clause (FOR
// UPDATE, FOR SHARE…); and no call, anywhere in the statement, of a
// function but the built-in ones on the allow list (allowedFunctions),
// unqualified or in pg_catalog: a function of another schema, a quoted
// name the list does not hold and a three-part name are refused alike. The whole parse tree is walked as the parser's
// JSON, so a node nested where no one thought to look is still seen. A
// refusal is a *sqlquery.Refused.
func Check(query string) (sqlquery.Statement, error) {
	if strings.TrimSpace(query) == "" {
		return sqlquery.Statement{}, sqlquery.Refusef("is empty")
	}
	tree, err := pgquery.ParseToJSON(query)
	if err != nil {
		return sqlquery.Statement{}, sqlquery.Refusef("is not valid SQL: %v", err)
	}
	var parsed struct {
		Stmts []struct {
			Stmt map[string]json.RawMessage `json:"stmt"`
		} `json:"stmts"`
	}
	if err := json.Unmarshal([]byte(tree), &parsed); err != nil {
		return sqlquery.Statement{}, sqlquery.Refusef("could not be read by the parser: %v", err)
	}
	switch n := len(parsed.Stmts); {
	case n == 0:
		return sqlquery.Statement{}, sqlquery.Refusef("is empty")
	case n > 1:
		return sqlquery.Statement{}, sqlquery.Refusef("must be one statement: it has %d", n)
	}
	for kind := range parsed.Stmts[0].Stmt {
		if kind != "SelectStmt" {
			return sqlquery.Statement{}, sqlquery.Refusef("must be a SELECT or WITH statement, not %s", statementName(kind))
		}
	}
	var root any
	dec := json.NewDecoder(strings.NewReader(tree))
	dec.UseNumber()
	if err := dec.Decode(&root); err != nil {
		return sqlquery.Statement{}, sqlquery.Refusef("could not be read by the parser: %v", err)
	}
	var st sqlquery.Statement
	if err := walk(root, &st); err != nil {
		return sqlquery.Statement{}, err
	}
	return st, nil
}

// walk checks every node under v. In the parser's JSON a node is an object
// under its type's name (capitalised: "DeleteStmt", "FuncCall"), and a field
// is lower camel case ("intoClause"); a few fields hold their node unwrapped,
// so both are looked at.
func walk(v any, st *sqlquery.Statement) error {
	switch x := v.(type) {
	case []any:
		for _, e := range x {
			if err := walk(e, st); err != nil {
				return err
			}
		}
	case map[string]any:
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		slices.Sort(keys) // the first refusal is the same on every run
		for _, k := range keys {
			if err := checkNode(k, x[k], st); err != nil {
				return err
			}
			if err := walk(x[k], st); err != nil {
				return err
			}
		}
	}
	return nil
}

// checkNode checks one key of the tree and its value.
func checkNode(key string, value any, st *sqlquery.Statement) error {
	switch {
	case key == "intoClause":
		return sqlquery.Refusef("must be read-only: SELECT … INTO creates a table")
	case key == "lockingClause":
		return sqlquery.Refusef("must be read-only: %s locks rows", lockingName(value))
	case key == "FuncCall":
		return checkFunction(value)
	case key == "ParamRef":
		if m, ok := value.(map[string]any); ok {
			if n, ok := m["number"].(json.Number); ok {
				if i, err := n.Int64(); err == nil && int(i) > st.Params {
					st.Params = int(i)
				}
			}
		}
	case strings.HasSuffix(key, "Stmt") && key != "SelectStmt" && isNodeType(key):
		return sqlquery.Refusef("must be read-only: %s is not allowed", statementName(key))
	}
	return nil
}

func isNodeType(key string) bool {
	return key != "" && unicode.IsUpper(rune(key[0]))
}

// checkFunction refuses a FuncCall of anything but an allowed built-in
// function. Parts are as the parser gives them: unquoted names folded to
// lower case, quoted ones as written ("PG_SLEEP" is not pg_sleep, and not
// on the list either).
func checkFunction(call any) error {
	parts := functionName(call)
	if len(parts) == 0 {
		return sqlquery.Refusef("may not call a function the check cannot name")
	}
	name := parts[len(parts)-1]
	shown := strings.Join(parts, ".")
	if reason := deniedFunction(strings.ToLower(name)); reason != "" {
		return sqlquery.Refusef("may not call %s(): it %s", shown, reason)
	}
	if len(parts) > 2 || (len(parts) == 2 && parts[0] != "pg_catalog") {
		return sqlquery.Refusef("may not call %s(): only built-in functions (unqualified or in pg_catalog) are allowed", shown)
	}
	if !allowedFunctions[name] {
		return sqlquery.Refusef("may not call %s(): it is not one of the functions a read-only report may call "+
			"(aggregates, window, math, string, date and time, JSON, array and cast functions)", shown)
	}
	return nil
}

// functionName is the parts of a FuncCall's name, as written.
func functionName(call any) []string {
	m, _ := call.(map[string]any)
	list, _ := m["funcname"].([]any)
	parts := make([]string, 0, len(list))
	for _, p := range list {
		node, _ := p.(map[string]any)
		str, _ := node["String"].(map[string]any)
		name, _ := str["sval"].(string)
		if name == "" {
			return nil
		}
		parts = append(parts, name)
	}
	return parts
}

// statementNames name the statements a refusal is most often about.
var statementNames = map[string]string{
	"InsertStmt": "INSERT", "UpdateStmt": "UPDATE", "DeleteStmt": "DELETE", "MergeStmt": "MERGE",
	"ExplainStmt": "EXPLAIN", "CopyStmt": "COPY", "VariableSetStmt": "SET", "DoStmt": "DO",
	"CallStmt": "CALL", "TransactionStmt": "a transaction statement", "CreateTableAsStmt": "CREATE TABLE AS",
	"ExecuteStmt": "EXECUTE", "PrepareStmt": "PREPARE", "LockStmt": "LOCK", "NotifyStmt": "NOTIFY",
	"ListenStmt": "LISTEN", "TruncateStmt": "TRUNCATE", "DeclareCursorStmt": "DECLARE",
}

// statementName names a statement node type for a message: "DELETE", or
// the words of an unlisted type ("AlterTableStmt" → "ALTER TABLE").
func statementName(kind string) string {
	if n, ok := statementNames[kind]; ok {
		return n
	}
	var b strings.Builder
	for i, r := range strings.TrimSuffix(kind, "Stmt") {
		if i > 0 && unicode.IsUpper(r) {
			b.WriteByte(' ')
		}
		b.WriteRune(unicode.ToUpper(r))
	}
	return b.String()
}

// lockingName names the strength of the first locking clause in v.
func lockingName(v any) string {
	list, _ := v.([]any)
	for _, e := range list {
		m, _ := e.(map[string]any)
		lc, _ := m["LockingClause"].(map[string]any)
		switch lc["strength"] {
		case "LCS_FORUPDATE":
			return "FOR UPDATE"
		case "LCS_FORNOKEYUPDATE":
			return "FOR NO KEY UPDATE"
		case "LCS_FORSHARE":
			return "FOR SHARE"
		case "LCS_FORKEYSHARE":
			return "FOR KEY SHARE"
		}
	}
	return "a locking clause"
}
