package api_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/appruntime/appruntime/internal/citation"
	"github.com/appruntime/appruntime/models"
)

// saveCitations stores citations of run runID on taskID, as a tool run does.
func (f *runtimeFixture) saveCitations(t *testing.T, taskID string, in ...citation.Input) []citation.Citation {
	t.Helper()
	out, err := citation.Save(context.Background(), f.db(), taskID, models.NewID(), in)
	require.NoError(t, err)
	return out
}

// TestCapabilityListCitations: list_citations is reachable once the binding
// names it (it is not grandfathered), lists the session's own task's
// citations with their ids, boxes and files, filters by file_name, and
// never shows another task's.
func TestCapabilityListCitations(t *testing.T) {
	t.Parallel()
	f := newRuntimeFixture(t)
	mine := f.saveCitations(t, f.taskID,
		citation.Input{File: "invoice.pdf", Page: 2, Quote: "Total 42.00", Box: &citation.Box{X: 0.1, Y: 0.6, W: 0.4, H: 0.05}},
		citation.Input{File: "terms.pdf", Page: 1, Quote: "Net 30"})
	otherTask, _, _ := f.parkedStep(t)
	f.saveCitations(t, otherTask, citation.Input{File: "invoice.pdf", Page: 1, Quote: "secret"})

	r := f.capability(t, "list_citations", nil)
	require.Equal(t, 403, r.Status, "a capability added since the list existed must be named: %s", r.Raw)

	spec := fixtureSpec()
	spec.Capabilities = []string{"list_citations"}
	f.saveSpec(t, spec)
	r = f.api.call(t, "POST", "/api/app-tools/sessions", f.tenant.HostToken, map[string]string{"step_id": f.stepID})
	require.Equal(t, 201, r.Status, string(r.Raw))
	require.Contains(t, r.Body["runtime"].(map[string]any)["capabilities"], "list_citations")
	require.NotContains(t, r.Body["runtime"].(map[string]any)["host_capabilities"], "list_citations")

	r = f.capability(t, "list_citations", nil)
	require.Equal(t, 200, r.Status, string(r.Raw))
	list := r.Body["result"].(map[string]any)["citations"].([]any)
	require.Len(t, list, 2, "only the session's own task's citations")
	first := list[0].(map[string]any)
	require.EqualValues(t, mine[0].ID, first["id"])
	require.Equal(t, "invoice.pdf", first["file"])
	require.EqualValues(t, 2, first["page"])
	require.Equal(t, "Total 42.00", first["quote"])
	require.Equal(t, map[string]any{"x": 0.1, "y": 0.6, "w": 0.4, "h": 0.05}, first["box"])
	require.NotContains(t, list[1].(map[string]any), "box")

	r = f.capability(t, "list_citations", map[string]any{"file_name": "terms.pdf"})
	require.Equal(t, 200, r.Status, string(r.Raw))
	list = r.Body["result"].(map[string]any)["citations"].([]any)
	require.Len(t, list, 1)
	require.EqualValues(t, mine[1].ID, list[0].(map[string]any)["id"])

	r = f.capability(t, "list_citations", map[string]any{"file": "terms.pdf"})
	require.Equal(t, 400, r.Status, "an unknown payload key: %s", r.Raw)
	require.Contains(t, r.Body["error"], "file")
}
