package toolconfig_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/appruntime/appruntime/internal/apperr"
	"github.com/appruntime/appruntime/internal/basetool"
	"github.com/appruntime/appruntime/internal/schema"
	"github.com/appruntime/appruntime/internal/toolconfig"
)

func TestCheckReadOnlyQuery(t *testing.T) {
	t.Parallel()
	const pg, ms = basetool.IntegrationPostgres, basetool.IntegrationMSSQL
	for _, tc := range []struct{ dialect, q string }{
		{pg, "SELECT 1"},
		{pg, "select id, name from invoices where status = $1;"},
		{pg, "  WITH t AS (SELECT 1 AS x) SELECT x FROM t  ;\n"},
		{pg, "(SELECT 1) UNION (SELECT 2)"},
		{pg, "SELECT 'insert; delete' AS note -- update here\nFROM t"},
		{pg, "SELECT \"update\" FROM t /* drop table t; */"},
		{pg, "SELECT $$ a; DROP TABLE x $$ AS body"},
		{pg, "SELECT $tag$ ; $tag$, replace(name, 'a', 'b') FROM t"},
		{pg, "SELECT E'it\\'s; insert' FROM t"},
		{pg, "SELECT 'it''s; insert' FROM t"},
		{pg, "SELECT name FROM t WHERE name ~ '^\\d+$'"},
		{pg, "SELECT 1 /* outer /* inner; */ still a comment; */ FROM t"},
		{pg, "SELECT (ARRAY[1, 2])[1] FROM t"},
		{ms, "SELECT [into] FROM dbo.t WHERE [delete] = @p1"},
		{ms, "SELECT [a]]b;c] FROM dbo.t"},
		{ms, "SELECT N'it''s; insert' FROM dbo.t"},
	} {
		require.NoError(t, toolconfig.CheckReadOnlyQuery(tc.dialect, tc.q), "%s: %s", tc.dialect, tc.q)
	}
	for _, tc := range []struct{ dialect, q, msg string }{
		{pg, "", "config.query is empty"},
		{pg, " ; ", "config.query is empty"},
		{pg, "-- only a comment", "config.query is empty"},
		{pg, "SELECT 1; SELECT 2", "must be one statement"},
		{pg, "SELECT 1; DROP TABLE invoices", "must be one statement"},
		{pg, "DELETE FROM invoices", "must be a SELECT or WITH statement"},
		{pg, "UPDATE t SET a = 1", "must be a SELECT or WITH statement"},
		{pg, "EXPLAIN ANALYZE SELECT 1", "must be a SELECT or WITH statement, not EXPLAIN"},
		{pg, "EXPLAIN ANALYZE DELETE FROM t", "must be a SELECT or WITH statement, not EXPLAIN"},
		{pg, "COPY t TO PROGRAM 'x'", "must be a SELECT or WITH statement, not COPY"},
		{pg, "SELECT * INTO backup FROM invoices", "must be read-only: SELECT … INTO creates a table"},
		{pg, "WITH d AS (DELETE FROM t RETURNING *) SELECT * FROM d", "must be read-only: DELETE is not allowed"},
		{pg, "SELECT * FROM t FOR UPDATE", "must be read-only: FOR UPDATE locks rows"},
		// The lexical check that came before the parser let these through.
		{pg, "select set_config('a','b',false), 1; ", "config.query may not call set_config()"},
		{pg, "SELECT nextval('s')", "config.query may not call nextval()"},
		{pg, "SELECT pg_terminate_backend(1)", "config.query may not call pg_terminate_backend()"},
		{pg, "SELECT 1 /* unterminated", "config.query is not valid SQL"},
		{pg, "SELEC 1", "config.query is not valid SQL"},
		{ms, "SELECT 'unterminated", "config.query has an unterminated string"},
		{ms, "SELECT 1\nGO\nSELECT 2", "GO separates batches"},
		{ms, "SELECT NEXT VALUE FOR s", "NEXT VALUE FOR changes a sequence"},
		// Each of these is two or three statements to Postgres: a '$' inside
		// an identifier opens no dollar quote, a type name ending in e is no
		// E'' prefix, '[' quotes nothing, and comments nest.
		{pg, "SELECT 1 AS x$y$; DELETE FROM t; SELECT 1 AS z$y$", "must be one statement"},
		{pg, "SELECT name'\\'; DELETE FROM t; SELECT '\\'", "must be one statement"},
		{pg, "SELECT (ARRAY[1,2])[length(']')]; DELETE FROM t; SELECT 1 -- ]", "must be one statement"},
		{pg, "SELECT 1 /* /* */ ' */; DELETE FROM t; SELECT 1 AS x --'", "must be one statement"},
		// With standard_conforming_strings off a backslash would escape the
		// quote and make this three statements; the parser reads it as the
		// executor's sessions do (the setting on), where it is not SQL at all.
		{pg, "SELECT 'a\\' ' ; DELETE FROM t; SELECT 1 --'", "config.query is not valid SQL"},
		{ms, "SELECT 1 /* /* */ ' */; DELETE FROM t; SELECT 1 AS x --'", "must be one statement"},
		{ms, "SELECT 'a\\'; DELETE FROM t; SELECT '\\'", "must be one statement"},
		{ms, "SELECT [x] FROM t; EXEC sp_who", "must be one statement"},
	} {
		err := toolconfig.CheckReadOnlyQuery(tc.dialect, tc.q)
		if tc.msg == "" {
			require.NoError(t, err, "%s: %s", tc.dialect, tc.q)
			continue
		}
		require.True(t, apperr.Is(err, apperr.Invalid), "%s: %q: %v", tc.dialect, tc.q, err)
		require.Contains(t, err.Error(), tc.msg, "%s: %s", tc.dialect, tc.q)
	}
}

func TestCompileSchemaRefusesOutsideReferences(t *testing.T) {
	t.Parallel()
	_, err := schema.Compile([]byte(`{"type":"object","properties":{"a":{"$ref":"#/$defs/a"}},"$defs":{"a":{"type":"string"}}}`), "input_schema")
	require.NoError(t, err, "a reference inside the schema is fine")
	for _, doc := range []string{`{"$ref":"file:///etc/passwd"}`, `{"$ref":"https://example.com/s.json"}`} {
		_, err := schema.Compile([]byte(doc), "input_schema")
		require.True(t, apperr.Is(err, apperr.Invalid), doc)
		require.Contains(t, err.Error(), "points outside the schema")
	}
}
