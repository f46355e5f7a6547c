package api_test

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/appruntime/appruntime/internal/config"
	"github.com/appruntime/appruntime/internal/document"
	"github.com/appruntime/appruntime/internal/document/documenttest"
	"github.com/appruntime/appruntime/internal/testkit"
	"github.com/appruntime/appruntime/models"
)

// withTranslator points TRANSLATE_URL at a stand-in engine.
func withTranslator(t *testing.T) (*testkit.LibreTranslate, apiOption) {
	engine := testkit.NewLibreTranslate(t)
	return engine, func(c *config.Config) { c.Tools.TranslateURL = engine.URL }
}

// upload stores a file of taskID and returns its id.
func (f *runtimeFixture) upload(t *testing.T, taskID, name string, data []byte) string {
	t.Helper()
	file, err := f.api.P.Files.Upload(context.Background(), taskID, name, "", bytes.NewReader(data))
	require.NoError(t, err)
	return file.ID
}

func (f *runtimeFixture) capability(t *testing.T, op string, payload any) response {
	t.Helper()
	return f.verb(t, "capability", map[string]any{"op": op, "payload": payload})
}

func TestCapabilitiesOnTheSessionsOwnTask(t *testing.T) {
	t.Parallel()
	f := newRuntimeFixture(t)
	mine := f.upload(t, f.taskID, "scan.pdf", documenttest.PDF("first page", "second page", "third page"))
	otherTask, _, _ := f.parkedStep(t)
	theirs := f.upload(t, otherTask, "theirs.pdf", documenttest.PDF("secret"))

	r := f.capability(t, "list_files", nil)
	require.Equal(t, 200, r.Status, string(r.Raw))
	list := r.Body["result"].(map[string]any)["files"].([]any)
	require.Len(t, list, 1)
	require.Equal(t, mine, list[0].(map[string]any)["file_id"])

	r = f.capability(t, "file_preview", map[string]any{"file_id": mine, "page": 2})
	require.Equal(t, 200, r.Status, string(r.Raw))
	preview := r.Body["result"].(map[string]any)
	require.Contains(t, preview["text"], "second page")
	require.EqualValues(t, 3, preview["pages"])

	// The managed-storage URL serves the bytes; altered, it is refused.
	res, err := http.Get(preview["url"].(string))
	require.NoError(t, err)
	body, _ := io.ReadAll(res.Body)
	res.Body.Close()
	require.Equal(t, 200, res.StatusCode)
	require.Equal(t, document.TypePDF, res.Header.Get("Content-Type"))
	require.True(t, bytes.HasPrefix(body, []byte("%PDF")))
	res, err = http.Get(strings.Replace(preview["url"].(string), "sig=", "sig=x", 1))
	require.NoError(t, err)
	res.Body.Close()
	require.Equal(t, 403, res.StatusCode)

	// Another task's file does not exist for this session.
	for _, op := range []string{"file_preview", "split_document"} {
		r = f.capability(t, op, map[string]any{"file_id": theirs})
		require.Equal(t, 404, r.Status, "%s: %s", op, r.Raw)
	}

	// The v2 envelope names the capability as the kind.
	r = f.verb(t, "capability", map[string]any{"op": "list_files"}, "X-Nanonets-App-Runtime", "v2")
	require.Equal(t, 200, r.Status)
	require.Equal(t, "list_files", r.Body["kind"])
	require.Equal(t, true, r.Body["ok"])

	// Bad params are 400; host capabilities are refused here.
	r = f.capability(t, "file_preview", map[string]any{"file_id": mine, "page": 9})
	require.Equal(t, 400, r.Status, string(r.Raw))
	r = f.capability(t, "document_selection", nil)
	require.Equal(t, 400, r.Status, string(r.Raw))
}

func TestCapabilitySplitDocument(t *testing.T) {
	t.Parallel()
	f := newRuntimeFixture(t)
	src := f.upload(t, f.taskID, "bundle.pdf", documenttest.PDF("a", "b", "c", "d", "e"))
	r := f.capability(t, "split_document", map[string]any{"file_id": src,
		"ranges": []map[string]int{{"from": 1, "to": 2}, {"from": 3, "to": 5}}})
	require.Equal(t, 200, r.Status, string(r.Raw))
	parts := r.Body["result"].(map[string]any)["files"].([]any)
	require.Len(t, parts, 2)
	for i, want := range []int{2, 3} {
		part := parts[i].(map[string]any)
		require.EqualValues(t, want, part["pages"])
		// The part is a real PDF of that many pages, a file of the task.
		_, data, err := f.api.P.Files.Open(context.Background(), f.taskID, part["file_id"].(string))
		require.NoError(t, err)
		n, err := document.Pages(data, document.TypePDF)
		require.NoError(t, err)
		require.Equal(t, want, n)
	}
	var count int64
	require.NoError(t, f.db().Model(&models.File{}).Where("task_id = ?", f.taskID).Count(&count).Error)
	require.EqualValues(t, 3, count)

	r = f.capability(t, "split_document", map[string]any{"file_id": src, "ranges": []map[string]int{{"from": 4, "to": 9}}})
	require.Equal(t, 400, r.Status, string(r.Raw))
	require.NoError(t, f.db().Model(&models.File{}).Where("task_id = ?", f.taskID).Count(&count).Error)
	require.EqualValues(t, 3, count, "a refused split writes nothing")
}

func TestCapabilityGetTranslation(t *testing.T) {
	t.Parallel()
	engine, withEngine := withTranslator(t)
	f := newRuntimeFixture(t, withEngine)
	file := f.upload(t, f.taskID, "letter.pdf", documenttest.PDF("Hello world."))
	ask := map[string]any{"file_id": file, "page": 1, "target_language": "de"}

	// The agent has translation off: 403, and the engine is not asked.
	r := f.capability(t, "get_translation", ask)
	require.Equal(t, 403, r.Status, string(r.Raw))
	require.Zero(t, engine.Requests())

	require.NoError(t, f.db().Model(&models.Agent{}).Where("id = ?", f.tenant.Agent.ID).
		Update("document_translation_enabled", true).Error)
	for range 2 {
		r = f.capability(t, "get_translation", ask)
		require.Equal(t, 200, r.Status, string(r.Raw))
		segments := r.Body["result"].(map[string]any)["segments"].([]any)
		require.NotEmpty(t, segments)
		require.Contains(t, segments[0].(map[string]any)["translated"], "[de] HELLO WORLD")
	}
	require.EqualValues(t, 1, engine.Requests(), "the second call is served from the cache")

	// The mint advertises what is served and granted.
	r = f.api.call(t, "POST", "/api/app-tools/sessions", f.tenant.HostToken, map[string]string{"step_id": f.stepID})
	require.Equal(t, 201, r.Status)
	rt := r.Body["runtime"].(map[string]any)
	require.ElementsMatch(t, []any{"file_preview", "list_files", "split_document", "get_translation"}, rt["capabilities"])
}

func TestCapabilityGetTranslationWithoutEngine(t *testing.T) {
	t.Parallel()
	f := newRuntimeFixture(t)
	file := f.upload(t, f.taskID, "letter.pdf", documenttest.PDF("Hello"))
	r := f.capability(t, "get_translation", map[string]any{"file_id": file, "page": 1, "target_language": "de"})
	require.Equal(t, 501, r.Status, string(r.Raw))

	r = f.api.call(t, "POST", "/api/app-tools/sessions", f.tenant.HostToken, map[string]string{"step_id": f.stepID})
	require.Equal(t, 201, r.Status)
	rt := r.Body["runtime"].(map[string]any)
	require.ElementsMatch(t, []any{"file_preview", "list_files", "split_document"}, rt["capabilities"])
	require.Empty(t, rt["host_capabilities"])
}
