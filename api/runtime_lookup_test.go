package api_test

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/appruntime/appruntime/internal/bindingspec"
	"github.com/appruntime/appruntime/models"
)

// A lookup on /read goes through the platform's real gateway to a loopback
// upstream (the test configuration allows 127.0.0.0/8): the upstream's own
// status and body with HTTP 200, templates filled from the payload and the
// session, pre-flight failures as 400 and 403, and no step or feed row.
func TestLookupThroughTheGateway(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	var gotURI, gotBody, gotRequestID string
	upstream := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		raw, _ := io.ReadAll(r.Body)
		mu.Lock()
		gotURI, gotBody, gotRequestID = r.RequestURI, string(raw), r.Header.Get("X-Request-Id")
		mu.Unlock()
		if r.URL.Path == "/accounts/missing" {
			w.WriteHeader(404)
			_, _ = w.Write([]byte("no such account"))
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"accounts":[{"id":"A-1"}]}`))
	}))
	t.Cleanup(upstream.Close)
	f := newRuntimeFixture(t)
	generousRate(f.api)
	spec := fixtureSpec()
	spec.HTTPCalls = []bindingspec.HTTPCall{
		{Op: "lookup_account", Method: "POST", URL: upstream.URL + "/accounts/{{account}}?q={{q}}",
			BodyTemplate:         json.RawMessage(`{"task":"{{task_id}}","name":"{{name}}","email":"{{email}}"}`),
			PruneEmptyBodyFields: true},
		{Op: "metadata", Method: "GET", URL: "http://169.254.169.254/latest/meta-data/"},
	}
	f.saveSpec(t, spec)

	r := f.verb(t, "read", map[string]any{"op": "lookup_account", "payload": map[string]any{
		"account": "A-1", "q": "acme corp", "name": "Ann", "task_id": "spoofed"}})
	require.Equal(t, 200, r.Status, string(r.Raw))
	require.Equal(t, map[string]any{"kind": "http", "status": float64(200),
		"body": map[string]any{"accounts": []any{map[string]any{"id": "A-1"}}}}, r.Body)
	mu.Lock()
	require.Equal(t, "/accounts/A-1?q=acme+corp", gotURI)
	require.JSONEq(t, `{"task":"`+f.taskID+`","name":"Ann"}`, gotBody, "task_id is the session's; an absent email is pruned")
	require.NotEmpty(t, gotRequestID)
	require.Equal(t, r.Header.Get("X-Request-Id"), gotRequestID, "the upstream call carries the request's id")
	mu.Unlock()

	for _, v2 := range []bool{false, true} {
		var headers []string
		if v2 {
			headers = []string{"X-Nanonets-App-Runtime", "v2"}
		}
		r = f.verb(t, "read", map[string]any{"op": "lookup_account", "payload": map[string]any{"account": "missing", "q": ""}}, headers...)
		require.Equal(t, 200, r.Status, "an upstream 404 is a lookup result: %s", r.Raw)
		reply := r.Body
		if v2 {
			require.Equal(t, "http", r.Body["kind"])
			reply = r.Body["result"].(map[string]any)
		}
		require.Equal(t, map[string]any{"kind": "http", "status": float64(404), "text": "no such account"}, reply)
	}

	cases := []struct {
		op      string
		payload map[string]any
		status  int
		message string
	}{
		{"lookup_account", map[string]any{"q": "x"}, 400, "{{account}} is not in the payload"},
		{"lookup_account", map[string]any{"account": "", "q": "x"}, 400, "{{account}} is empty; in the path an empty value would address another endpoint"},
		{"lookup_account", map[string]any{"account": "..", "q": "x"}, 403, "{{account}} would leave its path segment (a . or .. segment, or a control character, once decoded)"},
		{"metadata", nil, 403, `http_call "metadata": the url resolves to a refused address`},
	}
	for _, tc := range cases {
		r := f.verb(t, "read", map[string]any{"op": tc.op, "payload": tc.payload})
		require.Equal(t, tc.status, r.Status, string(r.Raw))
		require.Equal(t, tc.message, r.Body["error"])
	}

	var steps, feed int64
	require.NoError(t, f.db().Model(&models.Step{}).Where("task_id = ?", f.taskID).Count(&steps).Error)
	require.NoError(t, f.db().Model(&models.FeedEvent{}).Where("task_id = ?", f.taskID).Count(&feed).Error)
	require.EqualValues(t, 1, steps, "a lookup records no step")
	require.Zero(t, feed, "and no feed row")
}
