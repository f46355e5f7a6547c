package api_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/appruntime/appruntime/api"
	"github.com/appruntime/appruntime/internal/openapicheck"
)

// checkOpenAPI fails the test when the exchange breaks internal/openapi/openapi.json
// (internal/openapicheck).
func checkOpenAPI(t *testing.T, req *http.Request, reqBody []byte, status int, header http.Header, body []byte) {
	t.Helper()
	require.NoError(t, openapicheck.Check(req, reqBody, status, header, body))
}

// TestOpenAPIServed: the document is served with no token, is a valid
// OpenAPI 3.1 document naming this deployment's API as its server, and
// validates its own fetch.
func TestOpenAPIServed(t *testing.T) {
	t.Parallel()
	a := newTestAPI(t)
	r := a.call(t, "GET", api.OpenAPIPath, "", nil)
	require.Equal(t, 200, r.Status)
	require.Equal(t, "no-store", r.Header.Get("Cache-Control"))
	require.True(t, strings.HasPrefix(r.Header.Get("Content-Type"), "application/json"))
	require.Equal(t, "3.1.0", r.Body["openapi"])
	require.Equal(t, []any{map[string]any{"url": a.P.Config.PublicAPIURL, "description": "This deployment's API (PUBLIC_API_URL)."}}, r.Body["servers"])
	var served map[string]any
	require.NoError(t, json.Unmarshal(r.Raw, &served))
	delete(served, "servers")
	var committed map[string]any
	require.NoError(t, json.Unmarshal(api.OpenAPI, &committed))
	delete(committed, "servers")
	require.Equal(t, committed, served, "only the servers differ from the committed document")
	_, _, err := openapicheck.Document()
	require.NoError(t, err)
}

// TestOpenAPICoversEveryRoute: every route the API mounts is in the
// document, and the document names no route the API does not mount.
func TestOpenAPICoversEveryRoute(t *testing.T) {
	t.Parallel()
	a := newTestAPI(t)
	app := api.New(a.P.APIServices())
	doc, _, err := openapicheck.Document()
	require.NoError(t, err)
	documented := map[string]bool{}
	for path, item := range doc.Paths.Map() {
		for method := range item.Operations() {
			documented[method+" "+path] = true
		}
	}
	mounted := map[string]bool{}
	for _, r := range app.GetRoutes(true) {
		if r.Method == "HEAD" {
			continue // fiber answers HEAD on every GET route
		}
		path := r.Path
		for _, p := range r.Params {
			path = strings.Replace(path, ":"+p, "{"+p+"}", 1)
		}
		if strings.HasPrefix(path, "/api/app-runtime") && r.Method == "USE" {
			continue
		}
		mounted[r.Method+" "+path] = true
		require.True(t, documented[r.Method+" "+path], "%s %s is mounted but not in internal/openapi/openapi.json", r.Method, path)
	}
	for k := range documented {
		require.True(t, mounted[k], "%s is in internal/openapi/openapi.json but not mounted", k)
	}
}
