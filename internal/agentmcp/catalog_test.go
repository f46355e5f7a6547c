package agentmcp

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/appruntime/appruntime/internal/apperr"
	"github.com/appruntime/appruntime/internal/bundle"
)

func TestModelSchemaDropsInjectedKeys(t *testing.T) {
	t.Parallel()
	for name, tc := range map[string]struct{ in, want string }{
		"absent":   {``, `{"type":"object"}`},
		"injected": {`{"type":"object","properties":{"q":{"type":"string"},"configured_tool_id":{"type":"string"},"key_definitions":{},"summary_instructions":{}},"required":["q","configured_tool_id"]}`, `{"type":"object","properties":{"q":{"type":"string"}},"required":["q"]}`},
		"marked":   {`{"type":"object","properties":{"q":true,"hint":{"type":"string","x-exclude-from-llm":true}},"required":["hint"]}`, `{"type":"object","properties":{"q":true}}`},
		"kept":     {`{"type":"object","description":"d","properties":{"q":{"type":"string"}},"required":["q"]}`, `{"type":"object","description":"d","properties":{"q":{"type":"string"}},"required":["q"]}`},
	} {
		got, err := ModelSchema(json.RawMessage(tc.in))
		require.NoError(t, err, name)
		require.JSONEq(t, tc.want, string(got), name)
	}
	got, err := ModelSchema(json.RawMessage(`{"properties":{"q":{}}}`))
	require.NoError(t, err)
	require.JSONEq(t, `{"type":"object","properties":{"q":{}}}`, string(got), "an untyped root is an object")
	for _, bad := range []string{`[1]`, `true`, `{"type":"string"}`} {
		_, err := ModelSchema(json.RawMessage(bad))
		require.Error(t, err, bad)
	}
}

func TestAppToolName(t *testing.T) {
	t.Parallel()
	taken := map[string]bool{"invoice_review": true}
	require.Equal(t, "po_check", appToolName("PO check!", "0190aaaa-bbbb", taken))
	require.Equal(t, "invoice_review_0190aaaa", appToolName("Invoice review", "0190aaaa-bbbb", taken))
	require.Equal(t, "app_2024_report", appToolName("2024 report", "x", taken))
	require.Equal(t, "app_", appToolName("日本", "x", taken))
	require.Regexp(t, `^[a-zA-Z_][a-zA-Z0-9_-]{0,63}$`, appToolName(string(make([]byte, 200)), "0190aaaa-bbbb", map[string]bool{"app_": true}))
}

func TestRenderFormats(t *testing.T) {
	t.Parallel()
	tools := []Tool{{Name: "echo", Title: "Echo", Description: "d", InputSchema: json.RawMessage(`{"type":"object"}`), Kind: KindAgentTool}}
	for format, want := range map[string]string{
		"":                 `{"name":"echo","title":"Echo","description":"d","input_schema":{"type":"object"},"kind":"agent_tool"}`,
		"openai":           `{"type":"function","function":{"name":"echo","description":"d","parameters":{"type":"object"}}}`,
		"openai-responses": `{"type":"function","name":"echo","description":"d","parameters":{"type":"object"}}`,
		"anthropic":        `{"name":"echo","description":"d","input_schema":{"type":"object"}}`,
		"mcp":              `{"name":"echo","title":"Echo","description":"d","inputSchema":{"type":"object"}}`,
	} {
		out, err := Render(tools, format)
		require.NoError(t, err, format)
		got, err := json.Marshal(out[0])
		require.NoError(t, err)
		require.JSONEq(t, want, string(got), format)
	}
	_, err := Render(nil, "cohere")
	require.True(t, apperr.Is(err, apperr.Invalid), "%v", err)
}

func TestAppToolsRenderWithTheirResource(t *testing.T) {
	t.Parallel()
	tools := []Tool{{Name: "review", Title: "Review", Description: "d", InputSchema: json.RawMessage(`{"type":"object"}`),
		Kind: KindAppTool, ConfiguredToolID: "0190aaaa-bbbb", ResourceURI: AppResourceURI("0190aaaa-bbbb")}}
	for format, want := range map[string]string{
		"":    `{"name":"review","title":"Review","description":"d","input_schema":{"type":"object"},"kind":"app_tool","configured_tool_id":"0190aaaa-bbbb","resource_uri":"ui://appruntime/app-tools/0190aaaa-bbbb"}`,
		"mcp": `{"name":"review","title":"Review","description":"d","inputSchema":{"type":"object"},"_meta":{"ui":{"resourceUri":"ui://appruntime/app-tools/0190aaaa-bbbb","visibility":["model","app"]}}}`,
	} {
		out, err := Render(tools, format)
		require.NoError(t, err, format)
		got, err := json.Marshal(out[0])
		require.NoError(t, err)
		require.JSONEq(t, want, string(got), format)
	}
}

func TestAppCSP(t *testing.T) {
	t.Parallel()
	got, err := json.Marshal(AppCSP("https://api.example.com/", bundle.Grants{ConnectDomains: []string{"https://data.example.org"},
		FrameDomains: []string{"https://widgets.example.org"}}))
	require.NoError(t, err)
	require.JSONEq(t, `{"connectDomains":["https://api.example.com","https://data.example.org"],
		"resourceDomains":["https://api.example.com"],"frameDomains":["https://widgets.example.org"]}`, string(got))
	got, err = json.Marshal(AppCSP("", bundle.Grants{}))
	require.NoError(t, err)
	require.JSONEq(t, `{"connectDomains":[],"resourceDomains":[],"frameDomains":[]}`, string(got), "lists are never null")
}
