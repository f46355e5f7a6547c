package apiclient

import (
	"context"
	"encoding/json"
	"net/http"
	"os"
	"testing"

	"github.com/oapi-codegen/runtime/types"
	"github.com/stretchr/testify/require"
)

// devInfo is what `appruntime dev` writes to .appruntime/dev.json.
type devInfo struct {
	APIURL     string `json:"api_url"`
	HostToken  string `json:"host_token"`
	AgentToken string `json:"agent_token"`
	AdminToken string `json:"admin_token"`
	BindingID  string `json:"binding_id"`
	TaskID     string `json:"task_id"`
	StepID     string `json:"step_id"`
}

// bearer sends token as the request's Authorization.
func bearer(token string) ClientOption {
	return WithRequestEditorFn(func(_ context.Context, req *http.Request) error {
		req.Header.Set("Authorization", "Bearer "+token)
		return nil
	})
}

// The Go client oapi-codegen generates from the OpenAPI document works
// against a running `appruntime dev` (scripts/openapi-check starts one and
// names its dev.json in APPRUNTIME_DEV_JSON): an admin lists bindings, an
// agent reads its task, a host mints a session for the demo step, and the
// bundle's read returns the demo's invoices, each reply decoded into the
// generated types; a wrong token decodes as the documented 401.
func TestGeneratedClientAgainstDev(t *testing.T) {
	path := os.Getenv("APPRUNTIME_DEV_JSON")
	if path == "" {
		t.Skip("APPRUNTIME_DEV_JSON is unset: scripts/openapi-check runs this against appruntime dev")
	}
	raw, err := os.ReadFile(path)
	require.NoError(t, err)
	var dev devInfo
	require.NoError(t, json.Unmarshal(raw, &dev))
	ctx := context.Background()

	admin, err := NewClientWithResponses(dev.APIURL, bearer(dev.AdminToken))
	require.NoError(t, err)
	bindings, err := admin.ListBindingsWithResponse(ctx)
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, bindings.StatusCode(), "%s", bindings.Body)
	var ids []string
	for _, b := range bindings.JSON200.Bindings {
		ids = append(ids, b.Id)
	}
	require.Contains(t, ids, dev.BindingID)

	agent, err := NewClientWithResponses(dev.APIURL, bearer(dev.AgentToken))
	require.NoError(t, err)
	task, err := agent.GetTaskWithResponse(ctx, dev.TaskID)
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, task.StatusCode(), "%s", task.Body)
	require.Equal(t, dev.TaskID, task.JSON200.Id)

	host, err := NewClientWithResponses(dev.APIURL, bearer(dev.HostToken))
	require.NoError(t, err)
	var step types.UUID
	require.NoError(t, step.UnmarshalText([]byte(dev.StepID)))
	minted, err := host.MintSessionWithResponse(ctx, MintSessionJSONRequestBody{StepId: step})
	require.NoError(t, err)
	require.Equal(t, http.StatusCreated, minted.StatusCode(), "%s", minted.Body)
	require.NotEmpty(t, minted.JSON201.SessionToken)

	bundle, err := NewClientWithResponses(dev.APIURL, bearer(minted.JSON201.SessionToken))
	require.NoError(t, err)
	payload := map[string]any{"limit": 10}
	read, err := bundle.RuntimeReadWithResponse(ctx, nil, RuntimeReadJSONRequestBody{Op: "list_invoices", Payload: &payload})
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, read.StatusCode(), "%s", read.Body)
	v1, err := read.JSON200.AsReadV1()
	require.NoError(t, err)
	rows, err := v1.AsReadV10()
	require.NoError(t, err)
	require.Equal(t, []string{"id", "vendor", "amount", "status"}, rows.Columns)
	require.NotEmpty(t, rows.Rows)

	stranger, err := NewClientWithResponses(dev.APIURL, bearer("not-a-token"))
	require.NoError(t, err)
	refused, err := stranger.ListBindingsWithResponse(ctx)
	require.NoError(t, err)
	require.Equal(t, http.StatusUnauthorized, refused.StatusCode())
	require.NotNil(t, refused.JSON401, "the 401 decodes as the documented error envelope")
}
