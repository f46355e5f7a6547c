package llm_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/appruntime/appruntime/internal/llm"
)

func TestNewWithoutBaseURLIsNil(t *testing.T) {
	t.Parallel()
	require.Nil(t, llm.New("", "key", "model"))
	require.Nil(t, llm.New("  ", "key", "model"))
}

func TestCompleteJSON(t *testing.T) {
	t.Parallel()
	var got map[string]any
	var auth, path string
	reply := func(w http.ResponseWriter, status int, body string) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		_, _ = w.Write([]byte(body))
	}
	content := `{"vendor":"ACME"}`
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		auth, path = r.Header.Get("Authorization"), r.URL.Path
		_ = json.NewDecoder(r.Body).Decode(&got)
		switch content {
		case "status 429":
			reply(w, 429, `{"error":{"message":"rate limit reached"}}`)
		case "status 502":
			reply(w, 502, `<html>bad gateway</html>`)
		case "no choices":
			reply(w, 200, `{"choices":[]}`)
		default:
			b, _ := json.Marshal(map[string]any{"choices": []any{map[string]any{"finish_reason": "stop",
				"message": map[string]any{"role": "assistant", "content": content}}}})
			reply(w, 200, string(b))
		}
	}))
	defer srv.Close()
	c := llm.New(srv.URL+"/v1/", "sk-1", "gpt-x")
	ctx := context.Background()
	msgs := []llm.Message{{Role: "system", Content: "be brief"}, {Role: "user", Content: "hi"}}

	out, err := c.CompleteJSON(ctx, msgs)
	require.NoError(t, err)
	require.JSONEq(t, content, string(out))
	require.Equal(t, "/v1/chat/completions", path)
	require.Equal(t, "Bearer sk-1", auth)
	require.Equal(t, "gpt-x", got["model"])
	require.Equal(t, map[string]any{"type": "json_object"}, got["response_format"])
	require.Equal(t, []any{
		map[string]any{"role": "system", "content": "be brief"},
		map[string]any{"role": "user", "content": "hi"},
	}, got["messages"])

	for _, tc := range []struct{ content, want string }{
		{"status 429", "provider answered 429: rate limit reached"},
		{"status 502", "provider answered 502: Bad Gateway"},
		{"no choices", "reply has no choices"},
		{"not json at all", "reply content is not a JSON object"},
		{`["an","array"]`, "reply content is not a JSON object"},
	} {
		content = tc.content
		_, err := c.CompleteJSON(ctx, msgs)
		require.Error(t, err, tc.content)
		require.Contains(t, err.Error(), tc.want)
		require.False(t, strings.Contains(err.Error(), "sk-1"), "the key never appears in errors")
	}
}

func TestCompleteSchemaSendsPartsAndTheSchema(t *testing.T) {
	t.Parallel()
	var got map[string]any
	status := http.StatusOK
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_ = json.NewDecoder(r.Body).Decode(&got)
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		if status != http.StatusOK {
			_, _ = w.Write([]byte(`{"error":{"message":"slow down"}}`))
			return
		}
		_, _ = w.Write([]byte(`{"choices":[{"finish_reason":"stop","message":{"content":"{\"total\":12}"}}]}`))
	}))
	defer srv.Close()
	c := llm.New(srv.URL, "", "default-model").WithTimeout(0)
	schema := json.RawMessage(`{"type":"object","properties":{"total":{"type":"number"}}}`)
	out, err := c.CompleteSchema(context.Background(), "big-model", "extraction", schema, []llm.Message{
		{Role: "system", Content: "extract"},
		{Role: "user", Parts: []llm.Part{llm.TextPart("page 1"), llm.FilePart("a.pdf", "application/pdf", []byte("%PDF")), llm.ImagePart("image/png", []byte{1, 2})}},
	})
	require.NoError(t, err)
	require.JSONEq(t, `{"total":12}`, string(out))
	require.Equal(t, "big-model", got["model"], "the call's model overrides the client's")
	require.Equal(t, map[string]any{"type": "json_schema", "json_schema": map[string]any{"name": "extraction",
		"schema": map[string]any{"type": "object", "properties": map[string]any{"total": map[string]any{"type": "number"}}}}}, got["response_format"])
	require.Equal(t, []any{
		map[string]any{"role": "system", "content": "extract"},
		map[string]any{"role": "user", "content": []any{
			map[string]any{"type": "text", "text": "page 1"},
			map[string]any{"type": "file", "file": map[string]any{"filename": "a.pdf", "file_data": "data:application/pdf;base64,JVBERg=="}},
			map[string]any{"type": "image_url", "image_url": map[string]any{"url": "data:image/png;base64,AQI="}},
		}},
	}, got["messages"])

	status = http.StatusTooManyRequests
	_, err = c.CompleteSchema(context.Background(), "", "extraction", schema, []llm.Message{{Role: "user", Content: "x"}})
	var se *llm.StatusError
	require.ErrorAs(t, err, &se)
	require.Equal(t, http.StatusTooManyRequests, se.Status)
	require.Equal(t, "slow down", se.Message)
	require.Equal(t, "default-model", got["model"])
}
