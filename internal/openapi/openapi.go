// Package openapi holds the OpenAPI 3.1 document of every public endpoint
// of the API, embedded in the binary: the api serves it at
// /api/openapi.json, and internal/openapicheck validates the tests' traffic
// against it, so it cannot drift from the handlers. A leaf: it imports
// nothing of this module.
package openapi

import _ "embed"

// Document is internal/openapi/openapi.json.
//
//go:embed openapi.json
var Document []byte
