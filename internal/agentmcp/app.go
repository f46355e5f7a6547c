package agentmcp

import (
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/appruntime/appruntime/internal/apperr"
	"github.com/appruntime/appruntime/internal/artifact"
	"github.com/appruntime/appruntime/internal/bundle"
	"github.com/appruntime/appruntime/internal/task"
	"github.com/appruntime/appruntime/models"
)

// AppMIMEType is the media type of an MCP App's HTML (SEP-1865,
// @modelcontextprotocol/ext-apps RESOURCE_MIME_TYPE).
const AppMIMEType = "text/html;profile=mcp-app"

// appResourcePrefix starts every app tool's UI resource URI: the rest is
// the configured tool's id, stable across renames and bundle versions.
const appResourcePrefix = "ui://appruntime/app-tools/"

// SessionMetaKey is the key of an app tool's tools/call result _meta that
// carries what the bundle needs (SessionMeta); the bundle SDK reads it from
// the ui/notifications/tool-result the MCP Apps host forwards. It is
// outside content and structuredContent, so the model does not see it.
const SessionMetaKey = "appruntime/session"

// AppResourceURI is the UI resource of the app tool configuredToolID, as
// its tools/list entry names it in _meta.ui.resourceUri.
func AppResourceURI(configuredToolID string) string { return appResourcePrefix + configuredToolID }

// SessionMeta is the session an app tool's call mints for its step, in the
// shape of the init message our own host posts to a bundle (the bundle
// SDK's InitMessage), plus the step and session ids.
type SessionMeta struct {
	artifact.InitMessage
	SessionID string `json:"session_id"`
	StepID    string `json:"step_id"`
	TaskID    string `json:"task_id"`
}

// toolMeta is an app tool's tools/list _meta: its UI resource, for the
// model and the app (SEP-1865's default visibility, said out loud).
func toolMeta(t Tool) mcp.Meta {
	if t.Kind != KindAppTool {
		return nil
	}
	return mcp.Meta{"ui": map[string]any{"resourceUri": AppResourceURI(t.ConfiguredToolID), "visibility": []string{"model", "app"}}}
}

// appResource is an app tool's entry of resources/list.
func appResource(t Tool) *mcp.Resource {
	return &mcp.Resource{URI: AppResourceURI(t.ConfiguredToolID), Name: t.Name, Title: t.Title,
		Description: "The interactive app of the tool " + t.Name + ".", MIMEType: AppMIMEType}
}

// readAppResource answers resources/read of t's UI resource: the bundle
// version the tool mounts now (its pinned one, or the newest) as
// text/html;profile=mcp-app, with _meta.ui.csp (appCSP). Only the
// caller's agent's app tools are registered on its server, so another
// workspace's URI never reaches here: the SDK answers it with its
// resource-not-found error.
func (s *Service) readAppResource(c task.Caller, t Tool) mcp.ResourceHandler {
	return func(ctx context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
		uri := AppResourceURI(t.ConfiguredToolID)
		v, err := s.openBundle(ctx, c, t)
		if apperr.Is(err, apperr.NotFound) {
			return nil, mcp.ResourceNotFoundError(uri)
		}
		if err != nil {
			return nil, err
		}
		if !strings.HasPrefix(v.Bundle.ContentType, "text/html") {
			return nil, mcp.ResourceNotFoundError(uri) // a JS-only bundle is loaded by an HTML one, never shown alone
		}
		var approved bundle.Grants
		if v.Grant != nil && v.Grant.State == models.GrantApproved {
			approved = v.Grant.Grants
		}
		return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{
			URI: uri, MIMEType: AppMIMEType, Text: string(v.Content),
			Meta: mcp.Meta{"ui": map[string]any{"csp": AppCSP(s.apiURL, approved), "prefersBorder": true}},
		}}}, nil
	}
}

// openBundle reads the bundle version t mounts now.
func (s *Service) openBundle(ctx context.Context, c task.Caller, t Tool) (bundle.Served, error) {
	tool, err := s.tools.Get(ctx, c.WorkspaceID, t.ConfiguredToolID)
	if err != nil {
		return bundle.Served{}, err
	}
	if tool.AgentID != c.AgentID || tool.BundleID == nil {
		return bundle.Served{}, apperr.NotFoundf("app tool %s has no bundle", t.ConfiguredToolID)
	}
	version := 0
	if tool.BundleVersion != nil {
		version = *tool.BundleVersion
	} else {
		d, err := s.bundles.Get(ctx, c.WorkspaceID, *tool.BundleID)
		if err != nil {
			return bundle.Served{}, err
		}
		version = d.LatestVersion
	}
	return s.bundles.Open(ctx, *tool.BundleID, version)
}

// AppCSP is a bundle's _meta.ui.csp (SEP-1865 McpUiResourceCsp): the
// version's approved grants, with the runtime API's origin added to
// connectDomains (the bundle calls the runtime verbs) and to
// resourceDomains (a bundle may load the SDK from the API's /sdk/). The
// lists are never null: an empty one means "none" to a host.
func AppCSP(publicAPIURL string, approved bundle.Grants) map[string][]string {
	connect := append([]string{}, approved.ConnectDomains...)
	resource := append([]string{}, approved.ResourceDomains...)
	if u, err := url.Parse(publicAPIURL); err == nil && u.Scheme != "" && u.Host != "" {
		api := u.Scheme + "://" + u.Host
		connect = append([]string{api}, connect...)
		resource = append([]string{api}, resource...)
	}
	return map[string][]string{
		bundle.ListConnect:  connect,
		bundle.ListResource: resource,
		bundle.ListFrame:    append([]string{}, approved.FrameDomains...),
	}
}

// mintForStep mints the session an MCP Apps host hands the bundle of step:
// as the host's mint does, with no reviewer (an agent token has no user:
// the session's actor is session:<id>) and the agent token as the one that
// minted it, so revoking the token ends the session.
func (s *Service) mintForStep(ctx context.Context, c task.Caller, tokenID, taskID, stepID, replaces string) (SessionMeta, error) {
	d, err := s.artifacts.Mint(ctx, artifact.MintRequest{WorkspaceID: c.WorkspaceID, TokenID: tokenID, StepID: stepID, TaskID: taskID, Replaces: replaces})
	if err != nil {
		return SessionMeta{}, err
	}
	return SessionMeta{InitMessage: d.Init(), SessionID: d.SessionID, StepID: d.StepID, TaskID: d.TaskID}, nil
}

// appToolResult is an app tool's tools/call result: a text fallback for
// hosts without UI (and for the model), the step as structured content,
// and in _meta (SessionMetaKey) the session the bundle uses, which the
// model never reads. A step whose session cannot be minted yet (its
// producer still runs, or a reviewer holds the task's claim) is still
// added: _meta then says why, and the app asks again with the renew tool.
func (s *Service) appToolResult(ctx context.Context, c task.Caller, tokenID, taskID string, t Tool, step task.StepView) *mcp.CallToolResult {
	text := fmt.Sprintf("The app %q is shown to the user in the task's feed (step %s).", t.Title, step.ID)
	if t.AwaitReview {
		text += " The task waits until a reviewer finishes the review in the app; a later event on the task says what was decided."
	}
	res := &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: text}}, StructuredContent: step}
	sess, err := s.mintForStep(ctx, c, tokenID, taskID, step.ID, "")
	if err != nil {
		code, _, msg := apperr.Public(err)
		if code == apperr.Internal {
			s.log.ErrorContext(ctx, "agentmcp: mint an app tool's session", "step_id", step.ID, "err", err)
		}
		res.Meta = mcp.Meta{SessionMetaKey: map[string]any{"step_id": step.ID, "task_id": taskID, "error": string(code) + ": " + msg}}
		return res
	}
	res.Meta = mcp.Meta{SessionMetaKey: sess}
	return res
}

// RenewToolName is the app-only tool (SEP-1865 visibility ["app"]) a
// bundle under an MCP Apps host calls through the host to get a fresh
// session for its step before the current one expires.
const RenewToolName = "appruntime_renew_session"

func renewTool() *mcp.Tool {
	return &mcp.Tool{Name: RenewToolName, Title: "Renew an app's session",
		Description: "Called by an app tool's app (not by the model): mints a fresh session for the app's step.",
		InputSchema: json.RawMessage(`{"type":"object","properties":{"step_id":{"type":"string","format":"uuid"},"replaces":{"type":"string","format":"uuid"}},"required":["step_id"],"additionalProperties":false}`),
		Meta:        mcp.Meta{"ui": map[string]any{"visibility": []string{"app"}}}}
}

// renewHandler mints a fresh session for an app-tool step of one of the
// caller's agent's tasks (another agent's or workspace's step is the same
// not_found), returned in _meta as the app tool's call returns it. The
// session the app names in replaces (its own, minted with the same token)
// is revoked in the same transaction, so a renewal never counts against the
// task's live sessions and never ends a reviewer's.
func (s *Service) renewHandler(c task.Caller, tokenID string) mcp.ToolHandler {
	return func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		var in struct {
			StepID   string `json:"step_id"`
			Replaces string `json:"replaces"`
		}
		if err := json.Unmarshal(rawArguments(req), &in); err != nil || !models.IsID(in.StepID) {
			return s.errorResult(apperr.Invalidf("step_id must be an app-tool step's id")), nil
		}
		d, err := s.artifacts.Live(ctx, c.WorkspaceID, in.StepID)
		if err != nil {
			return s.errorResult(err), nil
		}
		if _, err := s.tasks.Get(ctx, c, d.TaskID); err != nil {
			return s.errorResult(apperr.NotFoundf("app-tool step %s not found", in.StepID)), nil
		}
		sess, err := s.mintForStep(ctx, c, tokenID, d.TaskID, in.StepID, in.Replaces)
		if err != nil {
			return s.errorResult(err), nil
		}
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "A fresh session until " + sess.ExpiresAt.Format(time.RFC3339) + "."}},
			Meta: mcp.Meta{SessionMetaKey: sess}}, nil
	}
}
