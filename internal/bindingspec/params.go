package bindingspec

import (
	"slices"

	"github.com/appruntime/appruntime/internal/apperr"
	"github.com/appruntime/appruntime/models"
)

// storedKeys are, per base tool, the input keys that come from the
// configured tool's stored settings and so may never be supplied by a
// bundle (seed 000: "its stored bindings — code, file name, query,
// integration — are never taken from the request").
var storedKeys = map[string][]string{
	models.BasePythonCode: {"code"},
	// matching_strategy is pinned to exact: the LLM strategy is unreachable from a bundle.
	models.BaseCSVLookup:     {"file_name", "matching_strategy"},
	models.BasePostgresQuery: {"query", "integration_id"},
	models.BaseMSSQLQuery:    {"query", "integration_id"},
}

// ExtractionParams are the only input keys a bundle may supply to
// structured_data_extraction; the instructions, output schema, validations,
// model and cost settings come from the configured tool.
var ExtractionParams = []string{"file_url", "sheets"}

// CheckParams refuses a binding's tools[] entry for baseTool whose params
// list a key the tool takes from its stored settings: a 403, at save time
// and at run time alike.
func CheckParams(baseTool string, params []string) error {
	for _, p := range params {
		if baseTool == models.BaseExtraction && !slices.Contains(ExtractionParams, p) {
			return apperr.Forbiddenf("params may not list %q for %s: only file_url and sheets come from the bundle", p, baseTool)
		}
		if slices.Contains(storedKeys[baseTool], p) {
			return apperr.Forbiddenf("params may not list %q for %s: it is a stored setting of the configured tool", p, baseTool)
		}
	}
	return nil
}
