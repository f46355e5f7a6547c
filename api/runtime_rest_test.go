package api_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/appruntime/appruntime/internal/binding"
	"github.com/appruntime/appruntime/internal/bindingspec"
	"github.com/appruntime/appruntime/internal/gateway"
	"github.com/appruntime/appruntime/models"
)

// A rest binding reads and writes through requests against its
// integration's base_url (the real gateway, a loopback upstream): a read
// answers the rows shape of a postgres read from a JSON array of objects,
// a write sends the row and records one feed row; a reply that is not an
// array, a non-2xx and a cursor are refused.
func TestRESTBindingReadsAndWritesThroughItsIntegration(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	var got []string // method, RequestURI, Authorization, body of each request
	upstream := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		raw, _ := io.ReadAll(r.Body)
		mu.Lock()
		got = append(got, r.Method+" "+r.RequestURI+" "+r.Header.Get("Authorization")+" "+string(raw))
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		switch r.URL.Path {
		case "/api/accounts":
			_, _ = w.Write([]byte(`[{"id":1,"name":"ACME","balance":10.5,"secret":"x"},{"id":2,"name":"Globex","tags":["a"]},{"id":3,"name":"Initech"}]`))
		case "/api/object":
			_, _ = w.Write([]byte(`{"id":1}`))
		case "/api/down":
			w.WriteHeader(503)
			_, _ = w.Write([]byte(`[{"id":1}]`))
		case "/api/accounts/7":
			if r.Method == "PATCH" {
				w.WriteHeader(409)
				return
			}
			w.WriteHeader(204)
		default:
			w.WriteHeader(201)
		}
	}))
	t.Cleanup(upstream.Close)
	f := newRuntimeFixture(t)
	generousRate(f.api)
	crm := f.restIntegration(t, f.tenant.Workspace.ID, upstream.URL+"/api/", gateway.Secrets{BearerToken: "crm-token"})
	bearer := &bindingspec.Auth{Kind: bindingspec.AuthBearer}
	spec := bindingspec.Spec{
		Reads: []bindingspec.Read{
			{Op: "accounts", Columns: []string{"id", "name", "balance", "tags"}, Filterable: []string{"name"}, Limit: 2,
				Request: &bindingspec.Request{Method: "get", Path: "/accounts?task={{task_id}}", Query: map[string]string{"q": "{{name}}"}, Auth: bearer}},
			{Op: "not_an_array", Columns: []string{"id"}, Request: &bindingspec.Request{Method: "GET", Path: "/object"}},
			{Op: "down", Columns: []string{"id"}, Request: &bindingspec.Request{Method: "GET", Path: "/down"}},
		},
		Writes: []bindingspec.Write{
			{Op: "create_account", Columns: []string{"name", "balance"}, FixedValues: map[string]any{"owner": "{{task_id}}"},
				Request: &bindingspec.Request{Method: "POST", Path: "/accounts", Auth: bearer}},
			{Op: "rename_account", KeyColumns: []string{"id"}, Columns: []string{"name"},
				Request: &bindingspec.Request{Method: "PATCH", Path: "/accounts/{{id}}", BodyTemplate: json.RawMessage(`{"display_name":"{{name}}"}`)}},
		},
	}
	raw, err := json.Marshal(spec)
	require.NoError(t, err)
	kind := bindingspec.KindREST
	_, err = f.api.P.Bindings.Update(context.Background(), f.tenant.Workspace.ID, f.bindingID, "test",
		binding.Patch{BindingKind: &kind, IntegrationID: &crm, AllowedOperations: raw})
	require.NoError(t, err)
	last := func() string {
		mu.Lock()
		defer mu.Unlock()
		return got[len(got)-1]
	}

	for _, v2 := range []bool{false, true} {
		var headers []string
		if v2 {
			headers = []string{"X-Nanonets-App-Runtime", "v2"}
		}
		r := f.verb(t, "read", map[string]any{"op": "accounts", "payload": map[string]any{"filters": map[string]any{"name": "ac me"}}}, headers...)
		require.Equal(t, 200, r.Status, string(r.Raw))
		reply := r.Body
		if v2 {
			require.Equal(t, "rows", r.Body["kind"])
			reply = r.Body["result"].(map[string]any)
		}
		require.Equal(t, map[string]any{"kind": "rows", "columns": []any{"id", "name", "balance", "tags"},
			"rows":      []any{[]any{float64(1), "ACME", 10.5, nil}, []any{float64(2), "Globex", nil, []any{"a"}}},
			"row_count": float64(2), "next_cursor": nil}, reply, "the first limit objects, the declared keys only")
		require.Equal(t, "GET /api/accounts?task="+f.taskID+"&q=ac+me Bearer crm-token ", last())
	}
	r := f.verb(t, "read", map[string]any{"op": "accounts", "payload": map[string]any{"columns": []string{"name"}}})
	require.Equal(t, 200, r.Status, string(r.Raw))
	require.Equal(t, []any{[]any{"ACME"}, []any{"Globex"}}, r.Body["rows"])
	require.Equal(t, "GET /api/accounts?task="+f.taskID+"&q= Bearer crm-token ", last(), "an absent filter is empty: no filter")

	cases := []struct {
		op      string
		payload map[string]any
		status  int
		message string
	}{
		{"not_an_array", nil, 502, `rest read "not_an_array": the upstream's reply is not a JSON array of objects`},
		{"down", nil, 502, `rest read "down": the upstream answered 503`},
		{"accounts", map[string]any{"cursor": "abc"}, 400, `op "accounts" is a rest read: its reply is one page, there is no cursor`},
		{"accounts", map[string]any{"columns": []string{"secret"}}, 403, `column "secret" is not readable through op "accounts"`},
		{"accounts", map[string]any{"filters": map[string]any{"id": 1}}, 403, `column "id" is not filterable through op "accounts"`},
	}
	for _, tc := range cases {
		r := f.verb(t, "read", map[string]any{"op": tc.op, "payload": tc.payload})
		require.Equal(t, tc.status, r.Status, "%s: %s", tc.op, r.Raw)
		require.Equal(t, tc.message, r.Body["error"], tc.op)
	}

	r = f.verb(t, "write", map[string]any{"op": "create_account", "payload": map[string]any{"row": map[string]any{"name": "Hooli", "balance": 3}}})
	require.Equal(t, 200, r.Status, string(r.Raw))
	require.Equal(t, float64(1), r.Body["rows_affected"])
	require.Equal(t, `POST /api/accounts Bearer crm-token {"balance":3,"name":"Hooli","owner":"`+f.taskID+`"}`, last(),
		"the row and the fixed values are the body, each value with its JSON type")
	r = f.verb(t, "write", map[string]any{"op": "rename_account", "payload": map[string]any{"row": map[string]any{"id": 7, "name": "x"}}})
	require.Equal(t, 502, r.Status, string(r.Raw))
	require.Equal(t, `rest write "rename_account": the upstream answered 409`, r.Body["error"])
	require.Equal(t, `PATCH /api/accounts/7  {"display_name":"x"}`, last())
	r = f.verb(t, "write", map[string]any{"op": "rename_account", "payload": map[string]any{"row": map[string]any{"name": "x"}}})
	require.Equal(t, 400, r.Status, string(r.Raw))
	require.Equal(t, `key column "id" is required for op "rename_account"`, r.Body["error"])

	require.Eventually(t, func() bool {
		var n int64
		require.NoError(t, f.db().Model(&models.FeedEvent{}).Where("task_id = ? AND name = ?", f.taskID, "create_account").Count(&n).Error)
		return n == 1
	}, 5e9, 1e7, "the accepted write has its feed row")
	var refused int64
	require.NoError(t, f.db().Model(&models.FeedEvent{}).Where("task_id = ? AND name = ?", f.taskID, "rename_account").Count(&refused).Error)
	require.Zero(t, refused, "the refused write has none")
}
