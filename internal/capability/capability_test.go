package capability_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/appruntime/appruntime/internal/apperr"
	"github.com/appruntime/appruntime/internal/capability"
	"github.com/appruntime/appruntime/internal/document"
	"github.com/appruntime/appruntime/internal/document/documenttest"
	"github.com/appruntime/appruntime/internal/files"
	"github.com/appruntime/appruntime/internal/storage"
	"github.com/appruntime/appruntime/internal/store"
	"github.com/appruntime/appruntime/internal/testkit"
	"github.com/appruntime/appruntime/internal/tool/translate"
	"github.com/appruntime/appruntime/models"
)

// libre is a LibreTranslate stand-in: POST /translate with {q: [...],
// target}, answering "[target] TEXT" for each string after delay, and
// counting the requests it was sent.
type libre struct {
	mu       sync.Mutex
	requests [][]string
	delay    time.Duration
	fail     bool
}

func (l *libre) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	var req struct {
		Q      []string `json:"q"`
		Target string   `json:"target"`
	}
	if r.URL.Path != "/translate" || json.NewDecoder(r.Body).Decode(&req) != nil {
		http.Error(w, `{"error":"bad request"}`, http.StatusBadRequest)
		return
	}
	l.mu.Lock()
	l.requests = append(l.requests, req.Q)
	delay, fail := l.delay, l.fail
	l.mu.Unlock()
	time.Sleep(delay)
	w.Header().Set("Content-Type", "application/json")
	if fail {
		w.WriteHeader(http.StatusInternalServerError)
		_, _ = w.Write([]byte(`{"error":"engine down"}`))
		return
	}
	out := make([]string, len(req.Q))
	for i, q := range req.Q {
		out[i] = fmt.Sprintf("[%s] %s", req.Target, strings.ToUpper(q))
	}
	_ = json.NewEncoder(w).Encode(map[string]any{"translatedText": out})
}

func (l *libre) count() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.requests)
}

type fixture struct {
	st          *store.Store
	blobs       storage.Store // where f.files keeps the bytes
	files       *files.Service
	caps        *capability.Service
	engine      *libre
	agent       models.Agent
	task, other string
	now         time.Time
}

func newFixture(t *testing.T, st *store.Store) *fixture {
	t.Helper()
	blobs, err := storage.NewDir(t.TempDir())
	require.NoError(t, err)
	t.Cleanup(func() { _ = blobs.Close() })
	f := &fixture{st: st, blobs: blobs, engine: &libre{}, now: time.Now().UTC().Truncate(time.Microsecond)}
	clock := func() time.Time { return f.now }
	f.serveFrom(t, blobs)
	srv := httptest.NewServer(f.engine)
	t.Cleanup(srv.Close)
	engine := translate.NewLibreTranslate(srv.URL, "", []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")})
	f.caps = capability.New(capability.Options{Store: st, Files: f.files, Translator: engine, Now: clock, Poll: 10 * time.Millisecond})

	tn := testkit.NewTenant(t, st.DB)
	require.NoError(t, st.DB.Model(&tn.Agent).Update("document_translation_enabled", true).Error)
	f.agent = tn.Agent
	for _, id := range []*string{&f.task, &f.other} {
		task := models.Task{ID: models.NewID(), WorkspaceID: tn.Workspace.ID, AgentID: tn.Agent.ID, Status: models.TaskWaitingForInput}
		require.NoError(t, st.DB.Create(&task).Error)
		*id = task.ID
	}
	return f
}

// serveFrom makes f.files keep its bytes in blobs (f.blobs, or a wrapper
// of it that a test watches).
func (f *fixture) serveFrom(t *testing.T, blobs storage.Store) {
	t.Helper()
	var err error
	f.files, err = files.New(files.Options{Store: f.st, Blobs: blobs, SecretsKey: testkit.TestKey, PublicAPIURL: "https://api.example.test",
		Now: func() time.Time { return f.now }})
	require.NoError(t, err)
}

func (f *fixture) upload(t *testing.T, task, name string, data []byte) models.File {
	t.Helper()
	file, err := f.files.Upload(context.Background(), task, name, "", bytes.NewReader(data))
	require.NoError(t, err)
	return file
}

// call runs a capability with a JSON payload and returns its result as
// JSON, the shape a bundle receives.
func (f *fixture) call(t *testing.T, task, name, payload string) (map[string]any, error) {
	t.Helper()
	res, err := f.caps.Call(context.Background(), task, name, json.RawMessage(payload))
	if err != nil {
		return nil, err
	}
	raw, err := json.Marshal(res)
	require.NoError(t, err)
	var out map[string]any
	require.NoError(t, json.Unmarshal(raw, &out))
	return out, nil
}

func pages(n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("Page %d opens here.\nIt wraps onto a second line.\n\nA second paragraph on page %d! Is it read?", i+1, i+1)
	}
	return out
}

func TestListFiles(t *testing.T) {
	t.Parallel()
	f := newFixture(t, testkit.Tx(t))
	out, err := f.call(t, f.task, capability.ListFiles, ``)
	require.NoError(t, err)
	require.Equal(t, map[string]any{"files": []any{}}, out, "no files: an empty list, not null")

	pdf := f.upload(t, f.task, "invoice.pdf", documenttest.PDF(pages(3)...))
	csv := f.upload(t, f.task, "rows.csv", []byte("a,b\n"))
	f.upload(t, f.other, "theirs.pdf", documenttest.PDF("x"))

	out, err = f.call(t, f.task, capability.ListFiles, `{}`)
	require.NoError(t, err)
	list := out["files"].([]any)
	require.Len(t, list, 2, "only the session's own task's files")
	first := list[0].(map[string]any)
	require.Equal(t, pdf.ID, first["file_id"])
	require.Equal(t, "invoice.pdf", first["name"])
	require.Equal(t, "application/pdf", first["content_type"])
	require.EqualValues(t, 3, first["pages"])
	require.EqualValues(t, pdf.Size, first["size"])
	require.NotEmpty(t, first["created_at"])
	require.NotEmpty(t, first["url_expires_at"])
	got, err := f.files.VerifyURLForTask(context.Background(), first["url"].(string), f.task)
	require.NoError(t, err, "each file comes with a managed-storage URL of the task")
	require.Equal(t, pdf.ID, got.ID)
	require.Equal(t, csv.ID, list[1].(map[string]any)["file_id"])

	_, err = f.call(t, f.task, capability.ListFiles, `{"task_id":"`+f.other+`"}`)
	require.True(t, apperr.Is(err, apperr.Invalid), "no parameter chooses the task: %v", err)
}

func TestFilePreview(t *testing.T) {
	t.Parallel()
	f := newFixture(t, testkit.Tx(t))
	pdf := f.upload(t, f.task, "invoice.pdf", documenttest.PDF(pages(3)...))
	img := f.upload(t, f.task, "photo.png", pngBytes(t))
	theirs := f.upload(t, f.other, "theirs.pdf", documenttest.PDF("x"))

	out, err := f.call(t, f.task, capability.FilePreview, `{"file_id":"`+pdf.ID+`","page":2}`)
	require.NoError(t, err)
	require.Equal(t, pdf.ID, out["file_id"])
	require.Equal(t, "invoice.pdf", out["name"])
	require.EqualValues(t, 3, out["pages"])
	require.EqualValues(t, 2, out["page"])
	require.Equal(t, "Page 2 opens here.\nIt wraps onto a second line.\n\nA second paragraph on page 2! Is it read?", out["text"])
	require.Equal(t, false, out["truncated"])
	_, err = f.files.VerifyURLForTask(context.Background(), out["url"].(string), f.task)
	require.NoError(t, err)

	out, err = f.call(t, f.task, capability.FilePreview, `{"file_id":"`+pdf.ID+`"}`)
	require.NoError(t, err)
	require.EqualValues(t, 1, out["page"], "page defaults to 1")
	require.Contains(t, out["text"], "Page 1 opens here.")

	out, err = f.call(t, f.task, capability.FilePreview, `{"file_id":"`+img.ID+`"}`)
	require.NoError(t, err)
	require.Equal(t, "", out["text"], "an image has no text")

	_, err = f.call(t, f.task, capability.FilePreview, `{"file_id":"`+theirs.ID+`"}`)
	require.True(t, apperr.Is(err, apperr.NotFound), "another task's file: %v", err)

	for payload, want := range map[string]string{
		`{}`:                                         "payload.file_id is required",
		`{"file_id":"` + pdf.ID + `","page":4}`:      `payload.page must be from 1 to 3 (the pages of "invoice.pdf"), got 4`,
		`{"file_id":"` + pdf.ID + `","page":0}`:      "payload.page must be from 1 to 3",
		`{"file_id":"` + pdf.ID + `","page":"2"}`:    "page",
		`{"file_id":"` + pdf.ID + `","page":1.5}`:    "page",
		`{"file_id":"` + pdf.ID + `","pgae":1}`:      `unknown field "pgae"`,
		`{"file_id":"` + pdf.ID + `","file_id":"x"}`: "duplicate key",
		`[]`: "bad payload",
	} {
		_, err := f.call(t, f.task, capability.FilePreview, payload)
		require.True(t, apperr.Is(err, apperr.Invalid), "%s: %v", payload, err)
		require.ErrorContains(t, err, want, payload)
	}
}

func TestSplitDocument(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := newFixture(t, testkit.Tx(t))
	src := f.upload(t, f.task, "batch.pdf", documenttest.PDF(pages(10)...))
	theirs := f.upload(t, f.other, "theirs.pdf", documenttest.PDF(pages(10)...))

	out, err := f.call(t, f.task, capability.SplitDocument, `{"file_id":"`+src.ID+`","ranges":[{"from":1,"to":2},{"from":3,"to":3},{"from":4,"to":10}]}`)
	require.NoError(t, err)
	parts := out["files"].([]any)
	require.Len(t, parts, 3)
	want := []struct {
		name     string
		from, to int
	}{{"batch, pages 1-2.pdf", 1, 2}, {"batch, page 3.pdf", 3, 3}, {"batch, pages 4-10.pdf", 4, 10}}
	for i, p := range parts {
		part := p.(map[string]any)
		require.Equal(t, want[i].name, part["name"])
		require.EqualValues(t, want[i].from, part["from"])
		require.EqualValues(t, want[i].to, part["to"])
		require.EqualValues(t, want[i].to-want[i].from+1, part["pages"])
		// The stored bytes have those pages, and they are the right ones.
		file, data, err := f.files.Open(ctx, f.task, part["file_id"].(string))
		require.NoError(t, err)
		n, err := document.PDFPages(data)
		require.NoError(t, err)
		require.Equal(t, want[i].to-want[i].from+1, n, "part %d", i)
		text, err := document.PageText(ctx, data, file.ContentType, 1)
		require.NoError(t, err)
		require.Contains(t, text.Text, fmt.Sprintf("Page %d opens here.", want[i].from))
		_, err = f.files.VerifyURLForTask(ctx, part["url"].(string), f.task)
		require.NoError(t, err)
	}
	list, err := f.caps.ListFiles(ctx, f.task)
	require.NoError(t, err)
	require.Len(t, list.Files, 4)

	_, err = f.call(t, f.task, capability.SplitDocument, `{"file_id":"`+theirs.ID+`","ranges":[{"from":1,"to":2}]}`)
	require.True(t, apperr.Is(err, apperr.NotFound), "another task's file: %v", err)

	for payload, want := range map[string]string{
		`{"ranges":[{"from":1,"to":2}]}`:                                     "payload.file_id is required",
		`{"file_id":"` + src.ID + `"}`:                                       "ranges must hold at least one",
		`{"file_id":"` + src.ID + `","ranges":[{"from":3,"to":2}]}`:          "ranges[0] is empty",
		`{"file_id":"` + src.ID + `","ranges":[{"from":1,"to":11}]}`:         "ranges[0].to is 11, but the document has 10 pages",
		`{"file_id":"` + src.ID + `","ranges":[{"from":1}]}`:                 "ranges[0] is empty",
		`{"file_id":"` + src.ID + `","ranges":[{"from":1,"to":2,"step":1}]}`: `unknown field "step"`,
		`{"file_id":"` + src.ID + `","ranges":"1-2"}`:                        "ranges",
	} {
		_, err := f.call(t, f.task, capability.SplitDocument, payload)
		require.True(t, apperr.Is(err, apperr.Invalid), "%s: %v", payload, err)
		require.ErrorContains(t, err, want, payload)
	}
	list, err = f.caps.ListFiles(ctx, f.task)
	require.NoError(t, err)
	require.Len(t, list.Files, 4, "refused splits add no file")
}

func TestServesAndUnknownNames(t *testing.T) {
	t.Parallel()
	f := newFixture(t, testkit.Tx(t))
	for _, name := range []string{capability.ListFiles, capability.FilePreview, capability.SplitDocument, capability.GetTranslation} {
		require.True(t, f.caps.Serves(name), name)
	}
	require.False(t, f.caps.Serves("document_selection"), "host capabilities are not served here")
	_, err := f.caps.Call(context.Background(), f.task, "document_selection", nil)
	require.True(t, apperr.Is(err, apperr.NotImplemented), "%v", err)

	noEngine := capability.New(capability.Options{Store: f.st, Files: f.files})
	require.False(t, noEngine.Serves(capability.GetTranslation), "not served, so not advertised")
	_, err = noEngine.Call(context.Background(), f.task, capability.GetTranslation, json.RawMessage(`{"file_id":"x","page":1,"target_language":"de"}`))
	require.True(t, apperr.Is(err, apperr.NotImplemented), "%v", err)
}
