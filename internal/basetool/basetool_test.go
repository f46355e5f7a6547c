package basetool_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/appruntime/appruntime/internal/basetool"
	"github.com/appruntime/appruntime/jobs"
)

// baseToolNames reads the models.Base* constants from their source, so a
// base tool added there without a row here fails this test.
func baseToolNames(t *testing.T) []string {
	t.Helper()
	f, err := parser.ParseFile(token.NewFileSet(), "../../models/binding.go", nil, 0)
	require.NoError(t, err)
	var names []string
	ast.Inspect(f, func(n ast.Node) bool {
		vs, ok := n.(*ast.ValueSpec)
		if !ok || len(vs.Names) != 1 || !strings.HasPrefix(vs.Names[0].Name, "Base") || len(vs.Values) != 1 {
			return true
		}
		lit, ok := vs.Values[0].(*ast.BasicLit)
		require.True(t, ok, "%s is not a string literal", vs.Names[0].Name)
		name, err := strconv.Unquote(lit.Value)
		require.NoError(t, err)
		names = append(names, name)
		return true
	})
	require.NotEmpty(t, names)
	return names
}

func TestEveryBaseToolHasOneRow(t *testing.T) {
	t.Parallel()
	names := baseToolNames(t)
	require.ElementsMatch(t, names, basetool.Names(func(basetool.Tool) bool { return true }))
	for _, row := range basetool.All {
		if !row.Runnable {
			continue
		}
		// A runnable tool without a queue class would run as a lookup with
		// a 60 s deadline whatever it is.
		require.NotEmpty(t, jobs.DefaultQueues().Of(row.QueueClass), row.Name)
		require.Positive(t, row.Deadline, row.Name)
		require.NotEmpty(t, row.RunStepKind, row.Name)
	}
}

func TestRunsOnAndServed(t *testing.T) {
	t.Parallel()
	q := jobs.PrefixedQueues("t:")
	for _, tc := range []struct {
		name, queue string
	}{
		{"structured_data_extraction", q.Extract}, {"python_code_tool", q.Script},
		{"csv_lookup_tool", q.Lookup}, {"translate_text", q.Lookup}, {"no_such_tool", q.Lookup},
	} {
		got, _ := basetool.RunsOn(q, tc.name)
		require.Equal(t, tc.queue, got, tc.name)
	}
	require.Equal(t, []string{"python_code_tool", "postgres_execute_query", "mssql_execute_query"}, basetool.Served(0))
	require.Equal(t, []string{"python_code_tool", "csv_lookup_tool", "postgres_execute_query", "mssql_execute_query",
		"structured_data_extraction", "translate_text"},
		basetool.Served(basetool.NeedsFiles|basetool.NeedsTranslateEngine|basetool.NeedsExtractionModel))
	require.Equal(t, 0.01, basetool.RateOf("structured_data_extraction"))
	require.Zero(t, basetool.RateOf("python_code_tool"))
}
