// Package openapi holds the OpenAPI 3.1 document of every public endpoint
// of the API, embedded in the binary: the api serves it at
// /api/openapi.json, and internal/openapicheck validates the tests' traffic
// against it, so it cannot drift from the handlers. A leaf: it imports
// nothing of this module.
package openapi

import (
	_ "embed"
	"encoding/json"
	"fmt"
)

// Document is internal/openapi/openapi.json.
//
//go:embed openapi.json
var Document []byte

// ForServer returns Document naming url (the deployment's PUBLIC_API_URL)
// as its one server, so a client generated from the served document calls
// this deployment; the committed document names the dev API's address.
func ForServer(url string) ([]byte, error) {
	var doc map[string]json.RawMessage
	if err := json.Unmarshal(Document, &doc); err != nil {
		return nil, fmt.Errorf("openapi: decode the document: %w", err)
	}
	servers, err := json.Marshal([]map[string]string{{
		"url": url, "description": "This deployment's API (PUBLIC_API_URL).",
	}})
	if err != nil {
		return nil, fmt.Errorf("openapi: encode servers: %w", err)
	}
	doc["servers"] = servers
	out, err := json.Marshal(doc)
	if err != nil {
		return nil, fmt.Errorf("openapi: encode the document: %w", err)
	}
	return out, nil
}
