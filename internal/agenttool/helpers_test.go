package agenttool_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/appruntime/appruntime/internal/agenttool"
	"github.com/appruntime/appruntime/internal/apperr"
)

// testWorkspace is the workspace of the components below.
const testWorkspace = "00000000-0000-0000-0000-0000000000aa"

// components is a ComponentSource over fixed components, standing in for
// the integrations table where a test is about references, not storage
// (IntegrationComponents has its own test on the real database).
type components map[string]agenttool.Component

func (c components) Component(_ context.Context, workspaceID, id string) (agenttool.Component, error) {
	comp, ok := c[id]
	if !ok || comp.WorkspaceID != workspaceID {
		return agenttool.Component{}, apperr.NotFoundf("integration not found")
	}
	return comp, nil
}

// apiComponent is the component most tests target.
var apiComponent = agenttool.Component{
	ID: "11111111-1111-1111-1111-111111111111", WorkspaceID: testWorkspace, Name: "api",
	BaseURL: "https://api.example.test/v1", Env: map[string]string{"API_KEY": "k-123", "REGION": "eu"},
}

var testComponents = components{apiComponent.ID: apiComponent}

func checkOptions() agenttool.CheckOptions {
	return agenttool.CheckOptions{WorkspaceID: testWorkspace, Components: testComponents}
}

// declaration returns a valid declaration document with target replaced.
func declaration(target string) []byte {
	return []byte(`{"name":"save_bookmark","displayName":"Save bookmark","description":"Save a bookmark URL.",
		"input":{"type":"object","properties":{"url":{"type":"string"}},"required":["url"]},
		"target":` + target + `}`)
}

// requireCode asserts err carries code.
func requireCode(t *testing.T, err error, code apperr.Code) {
	t.Helper()
	require.Error(t, err)
	require.Equal(t, code, apperr.CodeOf(err), "error: %v", err)
}

func mustJSON(t *testing.T, v any) json.RawMessage {
	t.Helper()
	b, err := json.Marshal(v)
	require.NoError(t, err)
	return b
}
