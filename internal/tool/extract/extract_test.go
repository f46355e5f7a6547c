package extract_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/xuri/excelize/v2"

	"github.com/appruntime/appruntime/internal/apperr"
	"github.com/appruntime/appruntime/internal/document/documenttest"
	"github.com/appruntime/appruntime/internal/llm"
	"github.com/appruntime/appruntime/internal/tool"
	"github.com/appruntime/appruntime/internal/tool/extract"
	"github.com/appruntime/appruntime/models"
)

// model is a stand-in speaking the chat-completions protocol: it records
// each request and answers with the next queued content (or a status).
type model struct {
	mu       sync.Mutex
	requests []map[string]any
	auth     []string
	answers  []string // content, or "status NNN"
}

func (m *model) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	if r.Method != http.MethodPost || r.URL.Path != "/v1/chat/completions" {
		w.WriteHeader(http.StatusNotFound)
		_, _ = w.Write([]byte(`{"error":{"message":"unknown route"}}`))
		return
	}
	var req map[string]any
	_ = json.NewDecoder(r.Body).Decode(&req)
	m.mu.Lock()
	m.requests = append(m.requests, req)
	m.auth = append(m.auth, r.Header.Get("Authorization"))
	answer := "{}"
	if len(m.answers) > 0 {
		answer, m.answers = m.answers[0], m.answers[1:]
	}
	m.mu.Unlock()
	var status int
	if _, err := fmt.Sscanf(answer, "status %d", &status); err == nil {
		w.WriteHeader(status)
		_, _ = w.Write([]byte(`{"error":{"message":"model overloaded"}}`))
		return
	}
	_ = json.NewEncoder(w).Encode(map[string]any{
		"id": "chatcmpl-1", "object": "chat.completion", "model": req["model"],
		"choices": []any{map[string]any{"index": 0, "finish_reason": "stop",
			"message": map[string]any{"role": "assistant", "content": answer}}},
		"usage": map[string]any{"prompt_tokens": 100, "completion_tokens": 10, "total_tokens": 110},
	})
}

func (m *model) last() map[string]any {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.requests[len(m.requests)-1]
}

func newModel(t *testing.T, answers ...string) (*model, *extract.Executor) {
	t.Helper()
	m := &model{answers: answers}
	srv := httptest.NewServer(m)
	t.Cleanup(srv.Close)
	return m, extract.New(llm.New(srv.URL+"/v1", "sk-test", "default-model"))
}

const schema = `{"type":"object","properties":{"total":{"type":"number"},"vendor":{"type":"string"}},"required":["total"]}`

func settings(extra string) models.JSON {
	return models.JSON(`{"instructions":"Read the invoice total.","output_schema":` + schema + `,"model":"vision-model","validations":[{"rule":"total > 0"}]` + extra + `}`)
}

func call(cfg models.JSON, doc *tool.Document, input string) tool.Call {
	return tool.Call{
		BaseTool: models.BaseExtraction,
		Tool:     &models.ConfiguredTool{DisplayName: "Invoice reader", BaseTool: models.BaseExtraction, Config: cfg},
		Document: doc,
		Input:    json.RawMessage(input),
	}
}

// pdf builds a valid PDF with n blank pages.
func pdf(n int) []byte { return documenttest.PDF(make([]string, n)...) }

func xlsx(t *testing.T) []byte {
	t.Helper()
	f := excelize.NewFile()
	defer f.Close()
	require.NoError(t, f.SetSheetName("Sheet1", "Header"))
	require.NoError(t, f.SetSheetRow("Header", "A1", &[]any{"vendor", "ACME"}))
	_, err := f.NewSheet("Lines")
	require.NoError(t, err)
	require.NoError(t, f.SetSheetRow("Lines", "A1", &[]any{"item", "amount"}))
	require.NoError(t, f.SetSheetRow("Lines", "A2", &[]any{"bolts, M6", 12.5}))
	buf, err := f.WriteToBuffer()
	require.NoError(t, err)
	return buf.Bytes()
}

func userParts(t *testing.T, req map[string]any) []map[string]any {
	t.Helper()
	msgs := req["messages"].([]any)
	require.Len(t, msgs, 2)
	var parts []map[string]any
	for _, p := range msgs[1].(map[string]any)["content"].([]any) {
		parts = append(parts, p.(map[string]any))
	}
	return parts
}

func TestExtractsAPDFAndBillsItsPages(t *testing.T) {
	t.Parallel()
	m, ex := newModel(t, `{"total": 1234.5, "vendor": "ACME"}`)
	doc := &tool.Document{Name: "invoice.pdf", ContentType: "application/pdf", Data: pdf(3)}
	res, err := ex.Run(context.Background(), call(settings(""), doc, `{"file_url":"https://files.example/t/1/invoice.pdf","task_id":"t-1"}`))
	require.NoError(t, err)
	require.Equal(t, 3, res.Units, "billed per page read")
	require.JSONEq(t, `{"data":{"total":1234.5,"vendor":"ACME"},"pages":3}`, string(res.Output))

	req := m.last()
	require.Equal(t, "Bearer sk-test", m.auth[0])
	require.Equal(t, "vision-model", req["model"], "the configured tool's model")
	format := req["response_format"].(map[string]any)
	require.Equal(t, "json_schema", format["type"])
	sent, _ := json.Marshal(format["json_schema"].(map[string]any)["schema"])
	require.JSONEq(t, schema, string(sent), "the output schema holds the answer")
	system := req["messages"].([]any)[0].(map[string]any)
	require.Equal(t, "system", system["role"])
	require.Contains(t, system["content"], "Read the invoice total.")
	require.Contains(t, system["content"], `{"rule":"total > 0"}`)
	parts := userParts(t, req)
	require.Len(t, parts, 1)
	require.Equal(t, "file", parts[0]["type"])
	file := parts[0]["file"].(map[string]any)
	require.Equal(t, "invoice.pdf", file["filename"])
	data, ok := strings.CutPrefix(file["file_data"].(string), "data:application/pdf;base64,")
	require.True(t, ok)
	decoded, err := base64.StdEncoding.DecodeString(data)
	require.NoError(t, err)
	require.Equal(t, doc.Data, decoded, "the document itself is sent")
}

func TestSpreadsheetSheetsImagesAndText(t *testing.T) {
	t.Parallel()
	m, ex := newModel(t, `{"total": 12.5}`, `{"total": 1}`, `{"total": 2}`, `{"total": 3}`)
	book := &tool.Document{Name: "po.xlsx", ContentType: "application/octet-stream", Data: xlsx(t)}

	res, err := ex.Run(context.Background(), call(settings(""), book, `{"file_url":"u","sheets":["Lines"]}`))
	require.NoError(t, err)
	require.Equal(t, 1, res.Units, "one sheet read")
	parts := userParts(t, m.last())
	require.Len(t, parts, 1)
	require.Equal(t, "Sheet \"Lines\", as CSV:\nitem,amount\n\"bolts, M6\",12.5\n", parts[0]["text"])

	res, err = ex.Run(context.Background(), call(settings(""), book, `{"file_url":"u"}`))
	require.NoError(t, err)
	require.Equal(t, 2, res.Units, "every sheet when none is named")
	require.Len(t, userParts(t, m.last()), 2)

	png := &tool.Document{Name: "scan.png", ContentType: "image/png", Data: []byte("\x89PNG\r\n\x1a\n....")}
	res, err = ex.Run(context.Background(), call(settings(""), png, `{"file_url":"u"}`))
	require.NoError(t, err)
	require.Equal(t, 1, res.Units)
	require.Equal(t, "data:image/png;base64,"+base64.StdEncoding.EncodeToString(png.Data),
		userParts(t, m.last())[0]["image_url"].(map[string]any)["url"])

	text := &tool.Document{Name: "lines.csv", ContentType: "text/csv; charset=utf-8", Data: []byte("a,b\n1,2\n")}
	res, err = ex.Run(context.Background(), call(settings(""), text, `{"file_url":"u"}`))
	require.NoError(t, err)
	require.Equal(t, 1, res.Units)
	require.Equal(t, "a,b\n1,2\n", userParts(t, m.last())[0]["text"])
}

func TestRefusals(t *testing.T) {
	t.Parallel()
	m, ex := newModel(t)
	doc := &tool.Document{Name: "invoice.pdf", ContentType: "application/pdf", Data: pdf(1)}
	book := &tool.Document{Name: "po.xlsx", ContentType: "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet", Data: xlsx(t)}
	for _, tc := range []struct {
		name  string
		cfg   models.JSON
		doc   *tool.Document
		input string
		code  apperr.Code
		want  string
	}{
		{"pause on validation", settings(`,"pause_on_validation":true`), doc, `{"file_url":"u"}`, apperr.Forbidden, "pauses on validation"},
		{"no file_url", settings(""), doc, `{}`, apperr.Invalid, "input.file_url is required"},
		{"sheets of a pdf", settings(""), doc, `{"file_url":"u","sheets":["A"]}`, apperr.Invalid, "input.sheets is for spreadsheets"},
		{"unknown sheet", settings(""), book, `{"file_url":"u","sheets":["Totals"]}`, apperr.Invalid, `input.sheets names "Totals", which the spreadsheet does not have (it has "Header", "Lines")`},
		{"not a pdf", settings(""), &tool.Document{Name: "x.pdf", ContentType: "application/pdf", Data: []byte("%PDF-1.4 garbage")}, `{"file_url":"u"}`, apperr.Invalid, "not a readable PDF"},
		{"unsupported type", settings(""), &tool.Document{Name: "x.bin", ContentType: "application/x-msdownload", Data: []byte("MZ")}, `{"file_url":"u"}`, apperr.Invalid, "the tool reads PDF"},
		{"bad stored schema", models.JSON(`{"instructions":"x","output_schema":{"type":7}}`), doc, `{"file_url":"u"}`, apperr.Invalid, "config.output_schema"},
	} {
		_, err := ex.Run(context.Background(), call(tc.cfg, tc.doc, tc.input))
		require.True(t, apperr.Is(err, tc.code), "%s: %v", tc.name, err)
		require.ErrorContains(t, err, tc.want, tc.name)
	}
	require.Empty(t, m.requests, "nothing refused reaches the model")

	_, err := extract.New(nil).Run(context.Background(), call(settings(""), doc, `{"file_url":"u"}`))
	require.True(t, apperr.Is(err, apperr.NotImplemented), "no model configured: %v", err)
}

func TestModelFailures(t *testing.T) {
	t.Parallel()
	_, ex := newModel(t, `{"vendor": "ACME"}`, `not json`, "status 429", "status 500")
	doc := &tool.Document{Name: "invoice.pdf", ContentType: "application/pdf", Data: pdf(2)}
	run := func() error {
		_, err := ex.Run(context.Background(), call(settings(""), doc, `{"file_url":"u"}`))
		return err
	}

	f, ok := tool.AsFailure(run())
	require.True(t, ok)
	require.Contains(t, f.Message, "does not match the output schema")
	require.Contains(t, f.Message, "missing property 'total'")
	require.Equal(t, 2, f.Units, "the model read the pages: they are billed")

	f, ok = tool.AsFailure(run())
	require.True(t, ok)
	require.Equal(t, "the model did not answer with a JSON object", f.Message)
	require.Equal(t, 2, f.Units)

	err := run()
	require.True(t, apperr.Is(err, apperr.Unavailable), "%v", err)
	err = run()
	require.True(t, apperr.Is(err, apperr.BadGateway), "%v", err)
}

func TestDeadline(t *testing.T) {
	t.Parallel()
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-release:
		case <-r.Context().Done():
		}
	}))
	defer srv.Close()
	defer close(release)
	ex := extract.New(llm.New(srv.URL, "", "m"))
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	_, err := ex.Run(ctx, call(settings(""), &tool.Document{Name: "a.pdf", ContentType: "application/pdf", Data: pdf(1)}, `{"file_url":"u"}`))
	require.True(t, apperr.Is(err, apperr.Timeout), "%v", err)
}

// TestDocumentBombsStayWithinBudget: the attack's documents through the
// extraction (the PDF naming one 64 MiB FlateDecode stream 200 times, the
// XLSX of four 58 MB inlineStr cells) are refused with over_budget (422)
// before the model is called, allocating a few MiB; before, excelize read
// the whole sheet (~1.4 GiB allocated) and pdfcpu decoded the PDF's
// references whole. Not parallel: it measures the process's allocations.
func TestDocumentBombsStayWithinBudget(t *testing.T) {
	m, ex := newModel(t)
	for _, doc := range []*tool.Document{
		{Name: "bomb.pdf", ContentType: "application/pdf", Data: documenttest.PDFBomb(64<<20, 200)},
		{Name: "bomb.xlsx", ContentType: "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet", Data: documenttest.XLSXBomb(58<<20, 4)},
	} {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		start := time.Now()
		_, err := ex.Run(ctx, call(settings(""), doc, `{"file_url":"u"}`))
		took := time.Since(start)
		runtime.ReadMemStats(&after)
		cancel()
		allocated := after.TotalAlloc - before.TotalAlloc
		t.Logf("%s: %v; %d MiB allocated in %s", doc.Name, err, allocated>>20, took)
		require.True(t, apperr.Is(err, apperr.OverBudget), "%s: %v", doc.Name, err)
		require.Equal(t, 422, apperr.Status(apperr.CodeOf(err)))
		require.Less(t, allocated, uint64(64<<20), doc.Name)
	}
	require.Empty(t, m.requests, "nothing refused reaches the model")
}

// TestAnExtractionThatCitesAsksWhereEachValueWasRead: with config
// citations the model answers {data, citations} under a schema wrapping
// the output schema; the output carries both, data checked against the
// output schema as before.
func TestAnExtractionThatCitesAsksWhereEachValueWasRead(t *testing.T) {
	t.Parallel()
	m, ex := newModel(t,
		`{"data":{"total":42,"vendor":"ACME"},"citations":[{"page":2,"quote":"Total 42","box":{"x":0.1,"y":0.7,"w":0.2,"h":0.04}},{"page":1,"quote":"ACME","box":null}]}`,
		`{"data":{"vendor":"ACME"},"citations":[]}`)
	doc := &tool.Document{Name: "invoice.pdf", ContentType: "application/pdf", Data: pdf(2)}
	res, err := ex.Run(context.Background(), call(settings(`,"citations":true`), doc, `{"file_url":"https://files.example/t/1/invoice.pdf"}`))
	require.NoError(t, err)
	require.JSONEq(t, `{"data":{"total":42,"vendor":"ACME"},"pages":2,"citations":[{"page":2,"quote":"Total 42","box":{"x":0.1,"y":0.7,"w":0.2,"h":0.04}},{"page":1,"quote":"ACME","box":null}]}`, string(res.Output))

	format := m.last()["response_format"].(map[string]any)
	sent := format["json_schema"].(map[string]any)["schema"].(map[string]any)
	require.ElementsMatch(t, []any{"data", "citations"}, sent["required"])
	inner, _ := json.Marshal(sent["properties"].(map[string]any)["data"])
	require.JSONEq(t, schema, string(inner), "the output schema holds data")
	system := m.last()["messages"].([]any)[0].(map[string]any)
	require.Contains(t, system["content"], "in citations where in the document each was read")

	_, err = ex.Run(context.Background(), call(settings(`,"citations":true`), doc, `{"file_url":"https://files.example/t/1/invoice.pdf"}`))
	f, failed := tool.AsFailure(err)
	require.True(t, failed, "%v", err)
	require.Contains(t, f.Message, "does not match the output schema")
	require.Equal(t, 2, f.Units)
}
