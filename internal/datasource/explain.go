package datasource

import "github.com/appruntime/appruntime/internal/apperr"

// Statement is the SQL a Select or Write sends for a query, and its bound
// arguments in order (the console's "try an op" shows both).
type Statement struct {
	SQL  string `json:"sql"`
	Args []any  `json:"args"`
}

// dialectOf returns the dialect of an integration kind.
func dialectOf(kind string) (*dialect, error) {
	switch kind {
	case KindPostgres:
		return postgresDialect, nil
	case KindSQLite:
		return sqliteDialect, nil
	}
	return nil, apperr.Invalidf("integration kind %q is not a data source", kind)
}

// SelectStatement is the statement Select sends for q on a data source of kind.
func SelectStatement(kind string, q SelectQuery) (Statement, error) {
	d, err := dialectOf(kind)
	if err != nil {
		return Statement{}, err
	}
	limit, err := pageLimit(q)
	if err != nil {
		return Statement{}, err
	}
	st, args, err := d.buildSelect(q, limit)
	if err != nil {
		return Statement{}, err
	}
	return Statement{SQL: st.sql, Args: args}, nil
}

// WriteStatement is the statement Write sends for w on a data source of kind.
func WriteStatement(kind string, w WriteStmt) (Statement, error) {
	d, err := dialectOf(kind)
	if err != nil {
		return Statement{}, err
	}
	st, args, err := d.buildWrite(w)
	if err != nil {
		return Statement{}, err
	}
	return Statement{SQL: st.sql, Args: args}, nil
}
