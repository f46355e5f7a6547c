// Package openapicheck validates HTTP exchanges with the API against its
// OpenAPI document (internal/openapi/openapi.json), so the tests' traffic keeps the
// document true: the api and end-to-end tests call Check on every reply.
package openapicheck

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"sync"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/getkin/kin-openapi/routers"
	"github.com/getkin/kin-openapi/routers/gorillamux"

	"github.com/appruntime/appruntime/internal/openapi"
)

var (
	once   sync.Once
	router routers.Router
	loaded *openapi3.T
	errDoc error
)

// Document loads and validates the embedded document once.
func Document() (*openapi3.T, routers.Router, error) {
	once.Do(func() {
		// Bundles and assets are uploaded as raw HTML or JavaScript.
		for _, ct := range []string{"text/html", "text/javascript", "application/javascript"} {
			openapi3filter.RegisterBodyDecoder(ct, openapi3filter.PlainBodyDecoder)
		}
		loaded, errDoc = openapi3.NewLoader().LoadFromData(openapi.Document)
		if errDoc != nil {
			return
		}
		if errDoc = loaded.Validate(context.Background()); errDoc != nil {
			return
		}
		// The document's server is the dev API's address; the tests' servers
		// listen on any loopback port, so exchanges are routed on paths alone.
		loaded.Servers = nil
		router, errDoc = gorillamux.NewRouter(loaded)
	})
	if errDoc != nil {
		return nil, nil, fmt.Errorf("internal/openapi/openapi.json: %w", errDoc)
	}
	return loaded, router, nil
}

// Check validates one exchange: its response always (every status the API
// answers must be described), its request when the API accepted it (a
// refused request may break the schema on purpose; reqBody is what was sent,
// req.Body having been consumed). A 404 or 405 on a route the document does
// not hold passes (a test probing unknown routes); any other exchange on such
// a route fails: every public route is in the document.
func Check(req *http.Request, reqBody []byte, status int, header http.Header, body []byte) error {
	_, r, err := Document()
	if err != nil {
		return err
	}
	route, params, err := r.FindRoute(req)
	if err != nil {
		if status == http.StatusNotFound || status == http.StatusMethodNotAllowed {
			return nil
		}
		return fmt.Errorf("openapi: %s %s is not in internal/openapi/openapi.json: %w", req.Method, req.URL.Path, err)
	}
	ctx := context.Background()
	in := &openapi3filter.RequestValidationInput{
		Request: req, PathParams: params, Route: route,
		Options: &openapi3filter.Options{AuthenticationFunc: openapi3filter.NoopAuthenticationFunc, MultiError: true},
	}
	if status < 400 {
		req.Body = io.NopCloser(bytes.NewReader(reqBody))
		if err := openapi3filter.ValidateRequest(ctx, in); err != nil {
			return fmt.Errorf("openapi: request %s %s breaks internal/openapi/openapi.json: %w", req.Method, req.URL.Path, err)
		}
	}
	out := &openapi3filter.ResponseValidationInput{
		RequestValidationInput: in, Status: status, Header: header,
		Body:    io.NopCloser(bytes.NewReader(body)),
		Options: &openapi3filter.Options{IncludeResponseStatus: true, MultiError: true},
	}
	if err := openapi3filter.ValidateResponse(ctx, out); err != nil {
		return fmt.Errorf("openapi: response %d to %s %s breaks internal/openapi/openapi.json: %w; body %.2000s", status, req.Method, req.URL.Path, err, body)
	}
	return nil
}
