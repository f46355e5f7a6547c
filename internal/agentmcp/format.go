package agentmcp

import (
	"slices"

	"github.com/appruntime/appruntime/internal/apperr"
)

// Formats GET /api/agent/tools emits with ?format=: the tool shapes the LLM
// APIs take.
const (
	// FormatNative is our own shape (Tool): the name, title, description,
	// input_schema, kind and, for an app tool, its configured_tool_id and
	// resource_uri.
	FormatNative = "native"
	// FormatOpenAI is an entry of OpenAI Chat Completions' tools:
	// {"type":"function","function":{"name","description","parameters"}}.
	FormatOpenAI = "openai"
	// FormatOpenAIResponses is an entry of OpenAI Responses' tools:
	// {"type":"function","name","description","parameters"}.
	FormatOpenAIResponses = "openai-responses"
	// FormatAnthropic is an entry of Anthropic Messages' tools:
	// {"name","description","input_schema"}.
	FormatAnthropic = "anthropic"
	// FormatMCP is an MCP tools/list entry: {"name","title","description","inputSchema"},
	// and an app tool's "_meta" ({"ui": {"resourceUri", "visibility"}}).
	FormatMCP = "mcp"
)

// Formats are the accepted ?format= values, the default first.
var Formats = []string{FormatNative, FormatOpenAI, FormatOpenAIResponses, FormatAnthropic, FormatMCP}

// Render returns tools in format ("" is FormatNative); an unknown format is
// 400 naming the accepted ones.
func Render(tools []Tool, format string) ([]any, error) {
	if format == "" {
		format = FormatNative
	}
	if !slices.Contains(Formats, format) {
		return nil, apperr.Invalidf("format %q is not one of %v", clip(format, 32), Formats)
	}
	out := make([]any, 0, len(tools))
	for _, t := range tools {
		switch format {
		case FormatOpenAI:
			out = append(out, map[string]any{"type": "function", "function": map[string]any{
				"name": t.Name, "description": t.Description, "parameters": t.InputSchema}})
		case FormatOpenAIResponses:
			out = append(out, map[string]any{"type": "function", "name": t.Name, "description": t.Description, "parameters": t.InputSchema})
		case FormatAnthropic:
			out = append(out, map[string]any{"name": t.Name, "description": t.Description, "input_schema": t.InputSchema})
		case FormatMCP:
			entry := map[string]any{"name": t.Name, "title": t.Title, "description": t.Description, "inputSchema": t.InputSchema}
			if meta := toolMeta(t); meta != nil {
				entry["_meta"] = meta
			}
			out = append(out, entry)
		default:
			out = append(out, t)
		}
	}
	return out, nil
}
