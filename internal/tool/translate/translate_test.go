package translate_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/appruntime/appruntime/internal/apperr"
	"github.com/appruntime/appruntime/internal/tool"
	"github.com/appruntime/appruntime/internal/tool/translate"
	"github.com/appruntime/appruntime/models"
)

var loopback = []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}

// libre is a stand-in speaking LibreTranslate's /translate: JSON or form
// bodies, q a string or an array, an api_key it checks, the languages it
// offers, and its {"error"} replies.
type libre struct {
	mu       sync.Mutex
	requests []map[string]any
	status   int // when set, every request answers it
}

func (l *libre) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	reply := func(status int, v any) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		_ = json.NewEncoder(w).Encode(v)
	}
	if r.Method != http.MethodPost || r.URL.Path != "/translate" {
		reply(http.StatusNotFound, map[string]string{"error": "Not Found"})
		return
	}
	var req map[string]any
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
		reply(http.StatusBadRequest, map[string]string{"error": "Invalid request: " + err.Error()})
		return
	}
	l.mu.Lock()
	l.requests = append(l.requests, req)
	status := l.status
	l.mu.Unlock()
	switch {
	case status != 0:
		reply(status, map[string]string{"error": "Slowdown: too many requests"})
	case req["api_key"] != "lt-key":
		reply(http.StatusForbidden, map[string]string{"error": "Invalid API key"})
	case req["source"] != "auto" || req["format"] != "text":
		reply(http.StatusBadRequest, map[string]string{"error": "Invalid request: source or format"})
	case req["target"] != "de" && req["target"] != "pt-BR":
		reply(http.StatusBadRequest, map[string]string{"error": fmt.Sprintf("%v is not supported", req["target"])})
	default:
		q, _ := req["q"].([]any)
		out := make([]string, len(q))
		for i, s := range q {
			out[i] = fmt.Sprintf("[%s] %s", req["target"], strings.ToUpper(s.(string)))
		}
		reply(http.StatusOK, map[string]any{"translatedText": out, "detectedLanguage": []any{}})
	}
}

func newEngine(t *testing.T) (*libre, string) {
	t.Helper()
	l := &libre{}
	srv := httptest.NewServer(l)
	t.Cleanup(srv.Close)
	return l, srv.URL
}

func call(enabled bool, input string) tool.Call {
	return tool.Call{BaseTool: models.BaseTranslateText, Agent: models.Agent{DocumentTranslationEnabled: enabled}, Input: json.RawMessage(input)}
}

func TestTranslatesAndBillsPerString(t *testing.T) {
	t.Parallel()
	engine, url := newEngine(t)
	ex := translate.New(translate.NewLibreTranslate(url+"/", "lt-key", loopback))
	res, err := ex.Run(context.Background(), call(true, `{"texts":["Invoice total","  ","Due date",""],"target_language":"de","task_id":"t-1"}`))
	require.NoError(t, err)
	require.JSONEq(t, `{"translations":[
		{"text":"Invoice total","translated":"[de] INVOICE TOTAL"},
		{"text":"  ","translated":"  "},
		{"text":"Due date","translated":"[de] DUE DATE"},
		{"text":"","translated":""}],"translated_count":2}`, string(res.Output))
	require.Equal(t, 2, res.Units, "one unit per string translated; blanks are free")
	require.Len(t, engine.requests, 1, "one call to the engine for the batch")
	require.Equal(t, map[string]any{"q": []any{"Invoice total", "Due date"}, "source": "auto", "target": "de", "format": "text", "api_key": "lt-key"}, engine.requests[0])

	// Nothing to translate: no call, nothing billed.
	res, err = ex.Run(context.Background(), call(true, `{"texts":[" "],"target_language":"pt-BR"}`))
	require.NoError(t, err)
	require.Zero(t, res.Units)
	require.Len(t, engine.requests, 1)
}

func TestDisabledOnTheAgentIsAToolFailure(t *testing.T) {
	t.Parallel()
	engine, url := newEngine(t)
	ex := translate.New(translate.NewLibreTranslate(url, "lt-key", loopback))
	res, err := ex.Run(context.Background(), call(false, `{"texts":["a"],"target_language":"de"}`))
	f, ok := tool.AsFailure(err)
	require.True(t, ok, "%v", err)
	require.Contains(t, f.Message, "translation is disabled for this agent")
	require.Zero(t, res.Units)
	require.Empty(t, engine.requests)
}

func TestNoEngineIs501(t *testing.T) {
	t.Parallel()
	require.Nil(t, translate.NewLibreTranslate(" ", "k", nil))
	_, err := translate.New(nil).Run(context.Background(), call(true, `{"texts":["a"],"target_language":"de"}`))
	require.True(t, apperr.Is(err, apperr.NotImplemented), "%v", err)
}

func TestBadInputIs400(t *testing.T) {
	t.Parallel()
	engine, url := newEngine(t)
	ex := translate.New(translate.NewLibreTranslate(url, "lt-key", loopback))
	tooMany, _ := json.Marshal(map[string]any{"texts": make([]string, translate.MaxTexts+1), "target_language": "de"})
	for input, want := range map[string]string{
		`{"target_language":"de"}`:                   "input.texts must hold at least one string",
		`{"texts":[],"target_language":"de"}`:        "input.texts must hold at least one string",
		string(tooMany):                              "input.texts holds 201 strings; at most 200",
		`{"texts":["a"]}`:                            "input.target_language is required",
		`{"texts":["a"],"target_language":"German"}`: `input.target_language "German" is not a language code`,
		`{"texts":"a","target_language":"de"}`:       "input.texts",
		`{"texts":["a",1],"target_language":"de"}`:   "input.texts",
	} {
		_, err := ex.Run(context.Background(), call(true, input))
		require.True(t, apperr.Is(err, apperr.Invalid), "%s: %v", input, err)
		require.ErrorContains(t, err, want, input)
	}
	require.Empty(t, engine.requests)
}

func TestEngineErrors(t *testing.T) {
	t.Parallel()
	engine, url := newEngine(t)
	ex := translate.New(translate.NewLibreTranslate(url, "lt-key", loopback))
	_, err := ex.Run(context.Background(), call(true, `{"texts":["a"],"target_language":"fr"}`))
	require.True(t, apperr.Is(err, apperr.Invalid), "an unsupported language is the request's fault: %v", err)
	require.ErrorContains(t, err, "fr is not supported")

	wrongKey := translate.New(translate.NewLibreTranslate(url, "wrong", loopback))
	_, err = wrongKey.Run(context.Background(), call(true, `{"texts":["a"],"target_language":"de"}`))
	require.True(t, apperr.Is(err, apperr.BadGateway), "%v", err)
	_, _, msg := apperr.Public(err)
	require.NotContains(t, msg, "Invalid API key", "the engine's complaint stays in the log")

	engine.mu.Lock()
	engine.status = http.StatusTooManyRequests
	engine.mu.Unlock()
	_, err = ex.Run(context.Background(), call(true, `{"texts":["a"],"target_language":"de"}`))
	require.True(t, apperr.Is(err, apperr.Unavailable), "%v", err)

	// The client goes through the SSRF guard: without loopback allowed, the
	// engine is never reached.
	before := len(engine.requests)
	guarded := translate.New(translate.NewLibreTranslate(url, "lt-key", nil))
	_, err = guarded.Run(context.Background(), call(true, `{"texts":["a"],"target_language":"de"}`))
	require.True(t, apperr.Is(err, apperr.BadGateway), "%v", err)
	require.ErrorContains(t, err, "OUTBOUND_ALLOW_CIDRS")
	require.Len(t, engine.requests, before)
}

func TestEngineReplyShape(t *testing.T) {
	t.Parallel()
	for body, want := range map[string]string{
		`{"translatedText":["a","b"]}`: "returned 2 translations for 1 strings",
		`{"translatedText":"a"}`:       "not JSON",
		`{}`:                           "has no translatedText",
		`<html>`:                       "not JSON",
	} {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte(body)) }))
		ex := translate.New(translate.NewLibreTranslate(srv.URL, "", loopback))
		_, err := ex.Run(context.Background(), call(true, `{"texts":["x"],"target_language":"de"}`))
		srv.Close()
		require.True(t, apperr.Is(err, apperr.BadGateway), "%s: %v", body, err)
		require.ErrorContains(t, err, want, body)
	}
}
