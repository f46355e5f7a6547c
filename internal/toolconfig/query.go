package toolconfig

import (
	"errors"
	"fmt"

	"github.com/appruntime/appruntime/internal/apperr"
	"github.com/appruntime/appruntime/internal/basetool"
	"github.com/appruntime/appruntime/internal/tool/sqlquery"
	"github.com/appruntime/appruntime/internal/tool/sqlquery/mssql"
	"github.com/appruntime/appruntime/internal/tool/sqlquery/postgres"
)

// CheckReadOnlyQuery refuses a bound SQL query that is not one read-only
// SELECT or WITH statement (seed 000: no second statement, no
// data-modifying statement, including SELECT … INTO), with the same gate
// the executor applies before it runs the query: Postgres's own parser for
// basetool.IntegrationPostgres, a strict T-SQL tokenizer for
// basetool.IntegrationMSSQL. A refusal is a 400 naming config.query.
func CheckReadOnlyQuery(dialect, query string) error {
	var err error
	switch dialect {
	case basetool.IntegrationPostgres:
		_, err = postgres.Check(query)
	case basetool.IntegrationMSSQL:
		_, err = mssql.Check(query)
	default:
		return fmt.Errorf("toolconfig: no read-only check for dialect %q", dialect)
	}
	var refused *sqlquery.Refused
	if errors.As(err, &refused) {
		return apperr.Invalidf("config.query %s", refused.Reason)
	}
	return err
}
