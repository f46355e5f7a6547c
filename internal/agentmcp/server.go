package agentmcp

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/appruntime/appruntime/internal/agentcall"
	"github.com/appruntime/appruntime/internal/apperr"
	"github.com/appruntime/appruntime/internal/task"
	"github.com/appruntime/appruntime/models"
)

// TaskHeader names the task an MCP request's tools/call runs on (see
// docs/agent-platforms.md#connect-an-agent-over-mcp): each call is a step
// of one of the agent's running tasks, as on the agent API, and an MCP
// session carries no task of its own.
const TaskHeader = "Appruntime-Task-Id"

// MaxRequestBytes bounds one MCP request's body: a tool call's input
// (agentcall.MaxInputBytes) plus the JSON-RPC envelope.
const MaxRequestBytes = agentcall.MaxInputBytes + 16<<10

// serverVersion is what initialize reports as the server's version.
const serverVersion = "1"

// Handler returns the Streamable HTTP handler of one request of c's agent
// whose tools are tools (Tools, loaded for this request). It is stateless:
// no Mcp-Session-Id, GET and DELETE answer 405 (there is nothing the
// server pushes outside a request), and replies are application/json.
//
// The SDK's DNS-rebinding guard (a loopback local address with another
// Host is refused) is off: it protects unauthenticated local servers,
// every request here carries an agent token a rebinding page does not
// have, and the API commonly sits behind a proxy that reaches it on
// loopback under the public Host.
//
// tokenID is the agent token's id: an app tool's call mints its step's
// session with it (revoking the token ends the session).
func (s *Service) Handler(c task.Caller, tokenID string, tools []Tool) http.Handler {
	return mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s.server(c, tokenID, tools) },
		&mcp.StreamableHTTPOptions{Stateless: true, JSONResponse: true, Logger: s.log, MaxRequestBodyBytes: MaxRequestBytes,
			DisableLocalhostProtection: true})
}

// server is an MCP server offering tools, each call run for c, and each
// app tool's UI resource (an MCP App, SEP-1865), with the app-only tool
// that renews an app's session.
func (s *Service) server(c task.Caller, tokenID string, tools []Tool) *mcp.Server {
	srv := mcp.NewServer(&mcp.Implementation{Name: "appruntime", Title: "appruntime", Version: serverVersion}, &mcp.ServerOptions{
		Logger: s.log,
		Instructions: "Each tools/call runs on one of your running tasks, named by the " + TaskHeader +
			" header (create the task with POST /api/agent/tasks).",
	})
	apps := false
	for _, t := range tools {
		srv.AddTool(&mcp.Tool{Name: t.Name, Title: t.Title, Description: t.Description, InputSchema: t.InputSchema,
			Meta: toolMeta(t)}, s.toolHandler(c, tokenID, t))
		if t.Kind == KindAppTool {
			apps = true
			srv.AddResource(appResource(t), s.readAppResource(c, t))
		}
	}
	if apps {
		srv.AddTool(renewTool(), s.renewHandler(c, tokenID))
	}
	return srv
}

// toolHandler runs t for c on the task the request names. Every refusal
// and failure is a tool result with isError (the model reads it), never a
// JSON-RPC error.
func (s *Service) toolHandler(c task.Caller, tokenID string, t Tool) mcp.ToolHandler {
	return func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		var taskID string
		if req.Extra != nil {
			taskID = req.Extra.Header.Get(TaskHeader)
		}
		if taskID == "" {
			return s.errorResult(apperr.Invalidf("no task: send the %s header with one of your running tasks' ids", TaskHeader)), nil
		}
		args := rawArguments(req)
		if t.Kind == KindAppTool {
			step, err := s.tasks.AddAppToolStep(ctx, c, taskID, task.StepInput{ConfiguredToolID: t.ConfiguredToolID, Params: args})
			if err != nil {
				return s.errorResult(err), nil
			}
			return s.appToolResult(ctx, c, tokenID, taskID, t, step), nil
		}
		v, err := s.calls.Call(ctx, c, taskID, agentcall.CallInput{Name: t.Name, Input: args})
		if err != nil {
			return s.errorResult(err), nil
		}
		return callResult(v), nil
	}
}

// rawArguments is a call's arguments as JSON (absent is {}).
func rawArguments(req *mcp.CallToolRequest) json.RawMessage {
	if req.Params == nil || len(req.Params.Arguments) == 0 {
		return json.RawMessage(`{}`)
	}
	return req.Params.Arguments
}

// callResult is a tool call as an MCP tool result: its content as text
// (or, when it parked the task, what the card asks), and the whole call
// as the structured content.
func callResult(v agentcall.CallView) *mcp.CallToolResult {
	text := ""
	switch {
	case v.Result != nil:
		text = v.Result.Content
		if text == "" {
			text = v.Result.Markdown
		}
		if text == "" && v.Result.EmbedURL != "" {
			text = "Shown to the user: " + v.Result.EmbedURL
		}
	case v.Pending != nil:
		text = fmt.Sprintf("The task waits for the user's input: %s. A later event on the task says what they chose.", v.Pending.Title)
	default:
		text = "The call is " + v.Status + "."
	}
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: text}}, StructuredContent: v,
		IsError: v.Status == models.ToolCallFailed}
}

// errorResult is err as a tool result with isError: its code and public
// message (an internal error is logged and shown generically, as the API
// does).
func (s *Service) errorResult(err error) *mcp.CallToolResult {
	code, status, msg := apperr.Public(err)
	if code == apperr.Internal {
		s.log.Error("agentmcp: tool call", "err", err)
	}
	return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: fmt.Sprintf("%s: %s", code, msg)}},
		StructuredContent: map[string]any{"error": msg, "code": code, "status": status}}
}
