package toolset_test

import (
	"context"
	"encoding/json"
	"io"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/appruntime/appruntime/internal/apperr"
	"github.com/appruntime/appruntime/internal/basetool"
	"github.com/appruntime/appruntime/internal/config"
	"github.com/appruntime/appruntime/internal/crypt"
	"github.com/appruntime/appruntime/internal/datasource"
	"github.com/appruntime/appruntime/internal/testkit"
	"github.com/appruntime/appruntime/internal/tool"
	"github.com/appruntime/appruntime/internal/tool/csvlookup"
	"github.com/appruntime/appruntime/internal/tool/toolset"
	"github.com/appruntime/appruntime/models"
)

func TestUnconfiguredServicesAre501(t *testing.T) {
	t.Parallel()
	cfg, err := config.Load(config.RoleDev, func(string) string { return "" })
	require.NoError(t, err)
	box, err := crypt.New(testkit.TestKey)
	require.NoError(t, err)
	set, closeSet := toolset.New(cfg, box, datasource.Guard{}, nil)
	defer closeSet()

	ctx := context.Background()
	for _, c := range []tool.Call{
		{BaseTool: models.BaseTranslateText, Agent: models.Agent{DocumentTranslationEnabled: true}, Input: json.RawMessage(`{"texts":["a"],"target_language":"de"}`)},
		{BaseTool: models.BaseExtraction, Tool: &models.ConfiguredTool{Config: models.JSON(`{"instructions":"x","output_schema":{"type":"object"}}`)}, Input: json.RawMessage(`{"file_url":"u"}`)},
		{BaseTool: models.BaseCSVLookup, Tool: &models.ConfiguredTool{Config: models.JSON(`{"file_name":"a.csv"}`)}, Input: json.RawMessage(`{"match_criteria":{"a":1}}`)},
		{BaseTool: "shell_tool"},
	} {
		_, err := set.Run(ctx, c)
		require.True(t, apperr.Is(err, apperr.NotImplemented), "%s: %v", c.BaseTool, err)
	}

	// The python executor is configured from the same settings, and runs.
	res, err := set.Run(ctx, tool.Call{BaseTool: models.BasePythonCode,
		Tool:  &models.ConfiguredTool{Config: models.JSON(`{"code":"def main(input):\n    return input['n'] * 2\n"}`)},
		Input: json.RawMessage(`{"n":21}`)})
	require.NoError(t, err)
	require.JSONEq(t, `42`, string(res.Output))
}

// Every runnable base tool of the table has an executor, and app_tool
// (which /run never runs) has none.
func TestEveryRunnableBaseToolHasAnExecutor(t *testing.T) {
	t.Parallel()
	cfg, err := config.Load(config.RoleDev, func(string) string { return "" })
	require.NoError(t, err)
	box, err := crypt.New(testkit.TestKey)
	require.NoError(t, err)
	set, closeSet := toolset.New(cfg, box, datasource.Guard{}, noFiles{})
	defer closeSet()
	for _, row := range basetool.All {
		_, ok := set[row.Name]
		require.Equal(t, row.Runnable, ok, row.Name)
	}
}

// noFiles finds no file: enough for csv_lookup_tool's executor to be built.
type noFiles struct{}

func (noFiles) Current(context.Context, *models.ConfiguredTool, string) (csvlookup.FileRef, error) {
	return csvlookup.FileRef{}, apperr.NotFoundf("no files")
}

func (noFiles) Open(context.Context, csvlookup.FileRef) (io.ReadCloser, error) {
	return nil, apperr.NotFoundf("no files")
}
