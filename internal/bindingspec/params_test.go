package bindingspec_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/appruntime/appruntime/internal/apperr"
	"github.com/appruntime/appruntime/internal/bindingspec"
	"github.com/appruntime/appruntime/models"
)

func TestCheckParams(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		base   string
		params []string
		denied string
	}{
		{models.BasePythonCode, []string{"edits", "rows"}, ""},
		{models.BasePythonCode, []string{"edits", "code"}, "code"},
		{models.BaseCSVLookup, []string{"match_criteria", "return_columns"}, ""},
		{models.BaseCSVLookup, []string{"match_criteria", "file_name"}, "file_name"},
		{models.BaseCSVLookup, []string{"matching_strategy"}, "matching_strategy"},
		{models.BasePostgresQuery, []string{"args"}, ""},
		{models.BasePostgresQuery, []string{"args", "query"}, "query"},
		{models.BaseMSSQLQuery, []string{"integration_id"}, "integration_id"},
		{models.BaseTranslateText, []string{"texts", "target_language"}, ""},
		{models.BaseExtraction, []string{"file_url", "sheets"}, ""},
		{models.BaseExtraction, []string{"file_url", "instructions"}, "instructions"},
		{models.BaseExtraction, []string{"model"}, "model"},
		{models.BaseExtraction, []string{"output_schema"}, "output_schema"},
	} {
		err := bindingspec.CheckParams(tc.base, tc.params)
		if tc.denied == "" {
			require.NoError(t, err, "%s %v", tc.base, tc.params)
			continue
		}
		require.True(t, apperr.Is(err, apperr.Forbidden), "%s %v: %v", tc.base, tc.params, err)
		require.ErrorContains(t, err, `"`+tc.denied+`"`)
	}
}
