package bindingspec

import (
	"github.com/appruntime/appruntime/internal/apperr"
	"github.com/appruntime/appruntime/internal/basetool"
)

// CheckParams refuses a binding's tools[] entry for baseTool whose params
// list a key the tool takes from its stored settings (basetool.Tool's
// StoredKeys and BundleParams): a 403, at save time and at run time alike.
func CheckParams(baseTool string, params []string) error {
	if p, why := basetool.DisallowedParam(baseTool, params); p != "" {
		return apperr.Forbiddenf("params may not list %q for %s: %s", p, baseTool, why)
	}
	return nil
}
