package toolconfig_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/appruntime/appruntime/internal/apperr"
	"github.com/appruntime/appruntime/internal/toolconfig"
)

func TestCheckReadOnlyQuery(t *testing.T) {
	t.Parallel()
	for _, q := range []string{
		"SELECT 1",
		"select id, name from invoices where status = $1;",
		"  WITH t AS (SELECT 1 AS x) SELECT x FROM t  ;\n",
		"(SELECT 1) UNION (SELECT 2)",
		"SELECT 'insert; delete' AS note -- update here\nFROM t",
		"SELECT \"update\" FROM t /* drop table t; */",
		"SELECT $$ a; DROP TABLE x $$ AS body",
		"SELECT $tag$ ; $tag$, replace(name, 'a', 'b') FROM t",
		"SELECT [into] FROM dbo.t WHERE [delete] = @p1",
		"SELECT E'it\\'s; insert' FROM t",
		"SELECT 'it''s; insert' FROM t",
	} {
		require.NoError(t, toolconfig.CheckReadOnlyQuery(q), q)
	}
	for _, tc := range []struct{ q, msg string }{
		{"", "config.query is empty"},
		{" ; ", "config.query is empty"},
		{"-- only a comment", "config.query is empty"},
		{"SELECT 1; SELECT 2", "must be one statement"},
		{"SELECT 1; DROP TABLE invoices", "must be one statement"},
		{"DELETE FROM invoices", "must be a SELECT or WITH statement"},
		{"UPDATE t SET a = 1", "must be a SELECT or WITH statement"},
		{"EXPLAIN ANALYZE SELECT 1", "must be a SELECT or WITH statement"},
		{"SELECT * INTO backup FROM invoices", "INTO is not allowed"},
		{"WITH d AS (DELETE FROM t RETURNING *) SELECT * FROM d", "DELETE is not allowed"},
		{"SELECT * FROM t FOR UPDATE", "UPDATE is not allowed"},
		{"select set_config('a','b',false), 1; ", ""},
		{"SELECT 1 /* unterminated", ""},
	} {
		err := toolconfig.CheckReadOnlyQuery(tc.q)
		if tc.msg == "" {
			require.NoError(t, err, tc.q)
			continue
		}
		require.True(t, apperr.Is(err, apperr.Invalid), "%q: %v", tc.q, err)
		require.Contains(t, err.Error(), tc.msg, tc.q)
	}
}

func TestCompileSchemaRefusesOutsideReferences(t *testing.T) {
	t.Parallel()
	_, err := toolconfig.CompileSchema([]byte(`{"type":"object","properties":{"a":{"$ref":"#/$defs/a"}},"$defs":{"a":{"type":"string"}}}`), "input_schema")
	require.NoError(t, err, "a reference inside the schema is fine")
	for _, doc := range []string{`{"$ref":"file:///etc/passwd"}`, `{"$ref":"https://example.com/s.json"}`} {
		_, err := toolconfig.CompileSchema([]byte(doc), "input_schema")
		require.True(t, apperr.Is(err, apperr.Invalid), doc)
		require.Contains(t, err.Error(), "points outside the schema")
	}
}
