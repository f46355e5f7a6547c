package postgres

import (
	"github.com/appruntime/appruntime/internal/crypt"
	"github.com/appruntime/appruntime/internal/tool/sqlquery"
)

// NewUngated is New with no gate (a query takes no parameters), for the tests of what stands under the gate: the READ ONLY
// transaction and the reset of a connection, which a query the gate
// refuses (a function of the customer's, current_setting) must reach.
func NewUngated(box *crypt.Box, opts Options) *Executor {
	e := New(box, opts)
	e.check = func(string) (sqlquery.Statement, error) { return sqlquery.Statement{}, nil }
	return e
}
