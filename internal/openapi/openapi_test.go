package openapi_test

import (
	"encoding/json"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/appruntime/appruntime/internal/openapi"
)

// operation is what the rules below read of an operation.
type operation struct {
	OperationID string                     `json:"operationId"`
	Tags        []string                   `json:"tags"`
	Responses   map[string]json.RawMessage `json:"responses"`
}

// The document is one client generators take: every operation has a
// unique, camel-case operationId and one reader's tag, and documents at
// least one error status with the error envelope; the document names a
// server and a license. (scripts/openapi-check lints it with Redocly's
// recommended rules besides.)
func TestDocumentIsGeneratorReady(t *testing.T) {
	var doc struct {
		Info struct {
			License struct{ Name string } `json:"license"`
		} `json:"info"`
		Servers    []struct{ URL string }                `json:"servers"`
		Tags       []struct{ Name string }               `json:"tags"`
		Paths      map[string]map[string]json.RawMessage `json:"paths"`
		Components struct {
			Responses map[string]json.RawMessage `json:"responses"`
		} `json:"components"`
	}
	require.NoError(t, json.Unmarshal(openapi.Document, &doc))
	require.NotEmpty(t, doc.Info.License.Name)
	require.Len(t, doc.Servers, 1)
	var tags []string
	for _, tg := range doc.Tags {
		tags = append(tags, tg.Name)
	}
	require.Equal(t, []string{"bundle", "host", "agent", "admin", "meta", "webhooks"}, tags)

	camel := regexp.MustCompile(`^[a-z][a-zA-Z]+$`)
	ids := map[string]string{}
	for path, item := range doc.Paths {
		for method, raw := range item {
			if !slices.Contains([]string{"get", "post", "put", "patch", "delete"}, method) {
				continue
			}
			where := strings.ToUpper(method) + " " + path
			var op operation
			require.NoError(t, json.Unmarshal(raw, &op), where)
			require.Regexp(t, camel, op.OperationID, where)
			require.NotContains(t, ids, op.OperationID, "%s and %s share an operationId", where, ids[op.OperationID])
			ids[op.OperationID] = where
			require.Len(t, op.Tags, 1, where)
			require.Contains(t, tags, op.Tags[0], where)
			errors := 0
			for status, resp := range op.Responses {
				if status[0] != '4' && status[0] != '5' {
					continue
				}
				errors++
				var ref struct {
					Ref string `json:"$ref"`
				}
				require.NoError(t, json.Unmarshal(resp, &ref), where)
				name, ok := strings.CutPrefix(ref.Ref, "#/components/responses/")
				require.True(t, ok, "%s %s: an error status refers to a shared error response", where, status)
				require.Contains(t, doc.Components.Responses, name, where)
			}
			require.NotZero(t, errors, "%s documents no error status", where)
		}
	}
}

// The served document names the deployment's API as its one server and is
// otherwise the committed one.
func TestForServer(t *testing.T) {
	out, err := openapi.ForServer("https://api.example.test")
	require.NoError(t, err)
	var served, committed map[string]any
	require.NoError(t, json.Unmarshal(out, &served))
	require.NoError(t, json.Unmarshal(openapi.Document, &committed))
	require.Equal(t, []any{map[string]any{"url": "https://api.example.test", "description": "This deployment's API (PUBLIC_API_URL)."}}, served["servers"])
	delete(served, "servers")
	delete(committed, "servers")
	require.Equal(t, committed, served)
}
