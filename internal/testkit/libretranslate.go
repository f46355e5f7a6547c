package testkit

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
)

// LibreTranslate is a LibreTranslate-compatible engine on loopback (what
// TRANSLATE_URL names): POST /translate {q: [...], target} answers
// {translatedText: ["[target] Q IN UPPER CASE", ...]}. It counts the
// requests it answered, so a test can tell a cached translation from a
// fresh one.
type LibreTranslate struct {
	// URL is the engine's base URL, for config.Tools.TranslateURL.
	URL      string
	requests atomic.Int64
}

// NewLibreTranslate starts a LibreTranslate stand-in, closed at cleanup.
func NewLibreTranslate(t *testing.T) *LibreTranslate {
	t.Helper()
	l := &LibreTranslate{}
	srv := httptest.NewServer(http.HandlerFunc(l.serve))
	t.Cleanup(srv.Close)
	l.URL = srv.URL
	return l
}

// Requests is how many translate requests the engine answered.
func (l *LibreTranslate) Requests() int64 { return l.requests.Load() }

func (l *LibreTranslate) serve(w http.ResponseWriter, r *http.Request) {
	var req struct {
		Q      []string `json:"q"`
		Target string   `json:"target"`
	}
	if r.URL.Path != "/translate" || json.NewDecoder(r.Body).Decode(&req) != nil {
		http.Error(w, `{"error":"bad request"}`, http.StatusBadRequest)
		return
	}
	l.requests.Add(1)
	out := make([]string, len(req.Q))
	for i, q := range req.Q {
		out[i] = "[" + req.Target + "] " + strings.ToUpper(q)
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(map[string]any{"translatedText": out})
}
