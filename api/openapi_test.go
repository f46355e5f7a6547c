package api_test

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/getkin/kin-openapi/routers"
	"github.com/getkin/kin-openapi/routers/gorillamux"
	"github.com/stretchr/testify/require"

	"github.com/appruntime/appruntime/api"
)

var (
	openAPIOnce   sync.Once
	openAPIRouter routers.Router
	openAPIErr    error
)

// openAPI loads and checks the embedded document once per test binary.
func openAPI(t *testing.T) routers.Router {
	t.Helper()
	openAPIOnce.Do(func() {
		// Bundles and assets are uploaded as raw HTML or JavaScript.
		for _, ct := range []string{"text/html", "text/javascript", "application/javascript"} {
			openapi3filter.RegisterBodyDecoder(ct, openapi3filter.PlainBodyDecoder)
		}
		doc, err := openapi3.NewLoader().LoadFromData(api.OpenAPI)
		if err != nil {
			openAPIErr = err
			return
		}
		if err = doc.Validate(context.Background()); err != nil {
			openAPIErr = err
			return
		}
		openAPIRouter, openAPIErr = gorillamux.NewRouter(doc)
	})
	require.NoError(t, openAPIErr, "api/openapi.json")
	return openAPIRouter
}

// checkOpenAPI validates one exchange against the document: its response
// always (every status the API answers must be described), its request when
// the API accepted it (a refused request may break the schema on purpose).
// An exchange on a route the document does not hold fails the test: every
// public route is in it.
func checkOpenAPI(t *testing.T, req *http.Request, reqBody []byte, status int, header http.Header, body []byte) {
	t.Helper()
	if status == http.StatusNotFound || status == http.StatusMethodNotAllowed {
		// An unknown route or a wrong method on a test's purpose: the
		// document holds the real routes only.
		if _, _, err := openAPI(t).FindRoute(req); err != nil {
			return
		}
	}
	route, params, err := openAPI(t).FindRoute(req)
	require.NoError(t, err, "openapi: %s %s is not in api/openapi.json", req.Method, req.URL.Path)
	in := &openapi3filter.RequestValidationInput{
		Request: req, PathParams: params, Route: route,
		Options: &openapi3filter.Options{AuthenticationFunc: openapi3filter.NoopAuthenticationFunc, MultiError: true},
	}
	if status < 400 {
		if reqBody != nil {
			req.Body = io.NopCloser(bytes.NewReader(reqBody))
		}
		err := openapi3filter.ValidateRequest(context.Background(), in)
		require.NoError(t, err, "openapi: request %s %s breaks api/openapi.json", req.Method, req.URL.Path)
	}
	out := &openapi3filter.ResponseValidationInput{
		RequestValidationInput: in, Status: status, Header: header,
		Body:    io.NopCloser(bytes.NewReader(body)),
		Options: &openapi3filter.Options{IncludeResponseStatus: true, MultiError: true},
	}
	require.NoError(t, openapi3filter.ValidateResponse(context.Background(), out),
		"openapi: response %d to %s %s breaks api/openapi.json: %s", status, req.Method, req.URL.Path, body)
}

// TestOpenAPIServed: the document is served with no token, is a valid
// OpenAPI 3.1 document, and validates its own fetch.
func TestOpenAPIServed(t *testing.T) {
	t.Parallel()
	a := newTestAPI(t)
	r := a.call(t, "GET", api.OpenAPIPath, "", nil)
	require.Equal(t, 200, r.Status)
	require.Equal(t, "no-store", r.Header.Get("Cache-Control"))
	require.True(t, strings.HasPrefix(r.Header.Get("Content-Type"), "application/json"))
	require.Equal(t, api.OpenAPI, r.Raw)
	require.Equal(t, "3.1.0", r.Body["openapi"])
	openAPI(t)
}

// TestOpenAPICoversEveryRoute: every route the API mounts is in the
// document, and the document names no route the API does not mount.
func TestOpenAPICoversEveryRoute(t *testing.T) {
	t.Parallel()
	a := newTestAPI(t)
	app := api.New(a.P.APIServices())
	doc, err := openapi3.NewLoader().LoadFromData(api.OpenAPI)
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
		require.True(t, documented[r.Method+" "+path], "%s %s is mounted but not in api/openapi.json", r.Method, path)
	}
	for k := range documented {
		require.True(t, mounted[k], "%s is in api/openapi.json but not mounted", k)
	}
}
