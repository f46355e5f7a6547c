// Package agentmcp serves an agent's tools to agent platforms: the catalog
// of what the agent's model may call (its seed-003 tool declarations and its
// app tools, each with the JSON Schema of its input and without the keys the
// platform injects), in the shapes LLM APIs take, and an MCP server
// (Streamable HTTP, on the official Go SDK) whose tools/call runs a tool
// exactly as the agent API does (internal/agentcall for a declaration,
// internal/task for an app tool).
package agentmcp

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"regexp"
	"slices"
	"strings"

	"github.com/appruntime/appruntime/internal/agentcall"
	"github.com/appruntime/appruntime/internal/artifact"
	"github.com/appruntime/appruntime/internal/bundle"
	"github.com/appruntime/appruntime/internal/schema"
	"github.com/appruntime/appruntime/internal/task"
	"github.com/appruntime/appruntime/internal/toolconfig"
	"github.com/appruntime/appruntime/models"
)

// Kinds of tool in the catalog.
const (
	// KindAgentTool is a seed-003 tool declaration: a call runs its target.
	KindAgentTool = "agent_tool"
	// KindAppTool is an app-tool configured tool: a call adds an app-tool
	// step (an artifact in the task's feed).
	KindAppTool = "app_tool"
)

// Tool is one tool an agent's model may call, in our own shape.
type Tool struct {
	Name        string          `json:"name"`
	Title       string          `json:"title"`
	Description string          `json:"description"`
	InputSchema json.RawMessage `json:"input_schema"`
	Kind        string          `json:"kind"`
	// ConfiguredToolID is the app tool a KindAppTool entry runs.
	ConfiguredToolID string `json:"configured_tool_id,omitempty"`
	// ResourceURI is a KindAppTool entry's MCP App (AppResourceURI).
	ResourceURI string `json:"resource_uri,omitempty"`
	// AwaitReview is whether calling the app tool parks the task.
	AwaitReview bool `json:"-"`
}

// Service lists an agent's tools and serves them over MCP. It is safe for
// concurrent use.
type Service struct {
	calls     *agentcall.Service
	tools     *toolconfig.Service
	tasks     *task.Service
	bundles   *bundle.Service
	artifacts *artifact.Minter
	apiURL    string
	log       *slog.Logger
}

// Options are what a Service is built from.
type Options struct {
	// Calls lists and runs the agent's tool declarations.
	Calls *agentcall.Service
	// Tools lists the agent's configured tools.
	Tools *toolconfig.Service
	// Tasks adds app-tool steps.
	Tasks *task.Service
	// Bundles reads an app tool's bundle for resources/read.
	Bundles *bundle.Service
	// Artifacts mints an app-tool step's session.
	Artifacts *artifact.Minter
	// PublicAPIURL is Config.PublicAPIURL: the origin a bundle calls.
	PublicAPIURL string
	Log          *slog.Logger
}

// NewService returns a Service.
func NewService(o Options) *Service {
	s := &Service{calls: o.Calls, tools: o.Tools, tasks: o.Tasks, bundles: o.Bundles, artifacts: o.Artifacts,
		apiURL: o.PublicAPIURL, log: o.Log}
	if s.log == nil {
		s.log = slog.Default()
	}
	return s
}

// Tools returns the caller's agent's tools: its declarations by name (as
// the admin API lists them), then its app tools by display name. An app
// tool's name is derived from its display name (provider-safe, unique in
// the list); its input schema is the configured one without the keys the
// worker injects (seed 000: x-exclude-from-llm); an app tool whose schema
// is not an object schema is left out (and logged).
func (s *Service) Tools(ctx context.Context, c task.Caller) ([]Tool, error) {
	decls, err := s.calls.ListDeclarations(ctx, c.WorkspaceID, c.AgentID)
	if err != nil {
		return nil, err
	}
	configured, err := s.tools.List(ctx, c.WorkspaceID, c.AgentID)
	if err != nil {
		return nil, err
	}
	out := make([]Tool, 0, len(decls)+len(configured))
	taken := map[string]bool{}
	for _, d := range decls {
		out = append(out, Tool{Name: d.Name, Title: d.DisplayName, Description: d.Description, InputSchema: d.Input, Kind: KindAgentTool})
		taken[d.Name] = true
	}
	for _, t := range configured {
		if t.BaseTool != models.BaseAppTool {
			continue // only app tools are the agent's to call; the others run behind a bundle's /run
		}
		in, err := ModelSchema(t.InputSchema)
		if err != nil {
			// Params are always an object (task.AddAppToolStep), so such a
			// tool cannot be called; one bad tool does not hide the others.
			s.log.WarnContext(ctx, "agentmcp: app tool left out of the agent's tools", "configured_tool_id", t.ID, "err", err)
			continue
		}
		name := appToolName(t.DisplayName, t.ID, taken)
		taken[name] = true
		out = append(out, Tool{Name: name, Title: t.DisplayName, Description: appToolDescription(t), InputSchema: in,
			Kind: KindAppTool, ConfiguredToolID: t.ID, ResourceURI: AppResourceURI(t.ID), AwaitReview: t.AwaitReview})
	}
	return out, nil
}

// appToolDescription says what calling an app tool does, since a
// configured tool has no description of its own.
func appToolDescription(t toolconfig.View) string {
	d := fmt.Sprintf("Shows the interactive app %q to the user in the task's feed.", t.DisplayName)
	if t.AwaitReview {
		d += " The task then waits until a reviewer finishes the review in the app."
	}
	return d
}

var unsafeNameChars = regexp.MustCompile(`[^a-z0-9_-]+`)

// appToolName is a provider-safe tool name (the rule of
// agenttool's declaration names) for an app tool, unique among taken: its
// display name, lower-cased with other characters as underscores; the
// start of its id is appended when that name is taken already.
func appToolName(displayName, id string, taken map[string]bool) string {
	base := strings.Trim(unsafeNameChars.ReplaceAllString(strings.ToLower(displayName), "_"), "_-")
	if base == "" || (base[0] >= '0' && base[0] <= '9') || base[0] == '-' {
		base = "app_" + base
	}
	base = clip(base, 55)
	if !taken[base] {
		return base
	}
	return base + "_" + clip(strings.ReplaceAll(id, "-", ""), 8)
}

func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return strings.TrimRight(s[:n], "_-")
}

// ModelSchema is an app tool's input schema as a model sees it: the
// configured schema (an object with no properties when absent) without the
// properties the worker injects (task.InjectedKeys) or that are marked
// x-exclude-from-llm, and without them in required.
func ModelSchema(configured json.RawMessage) (json.RawMessage, error) {
	if len(configured) == 0 {
		configured = schema.DefaultInput
	}
	var root map[string]json.RawMessage
	if err := json.Unmarshal(configured, &root); err != nil || root == nil {
		return nil, fmt.Errorf("agentmcp: input schema is not an object")
	}
	// LLM APIs and MCP take only object schemas at the root; params are an
	// object whatever the schema says, so an untyped root is one.
	if typ, ok := root["type"]; !ok {
		root["type"] = json.RawMessage(`"object"`)
	} else if string(bytes.TrimSpace(typ)) != `"object"` {
		return nil, fmt.Errorf("agentmcp: input schema's type is %s, not \"object\"", typ)
	}
	if raw, ok := root["properties"]; ok {
		var props map[string]json.RawMessage
		if err := json.Unmarshal(raw, &props); err != nil {
			return nil, fmt.Errorf("agentmcp: input schema properties: %w", err)
		}
		var dropped []string
		for name, p := range props {
			var marks struct {
				Exclude bool `json:"x-exclude-from-llm"`
			}
			_ = json.Unmarshal(p, &marks) // a non-object property schema (true/false) has no marks
			if marks.Exclude || slices.Contains(task.InjectedKeys, name) {
				delete(props, name)
				dropped = append(dropped, name)
			}
		}
		root["properties"] = mustJSON(props)
		if raw, ok := root["required"]; ok && len(dropped) > 0 {
			var required []string
			if json.Unmarshal(raw, &required) == nil {
				required = slices.DeleteFunc(required, func(k string) bool { return slices.Contains(dropped, k) })
				if len(required) == 0 {
					delete(root, "required")
				} else {
					root["required"] = mustJSON(required)
				}
			}
		}
	}
	return mustJSON(root), nil
}

func mustJSON(v any) json.RawMessage {
	b, err := json.Marshal(v)
	if err != nil {
		panic(fmt.Sprintf("agentmcp: encode %T: %v", v, err))
	}
	return b
}
