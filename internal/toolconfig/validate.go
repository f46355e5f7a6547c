package toolconfig

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"gorm.io/gorm"

	"github.com/appruntime/appruntime/internal/apperr"
	"github.com/appruntime/appruntime/internal/basetool"
	"github.com/appruntime/appruntime/internal/bundle"
	"github.com/appruntime/appruntime/internal/field"
	"github.com/appruntime/appruntime/internal/schema"
	"github.com/appruntime/appruntime/internal/store"
	"github.com/appruntime/appruntime/internal/strictjson"
	"github.com/appruntime/appruntime/models"
)

// Validate checks a configured tool for the workspace and returns the row to
// store (without id and timestamps). selfID is the tool being updated, "" on
// create. Every refusal is a 400 naming the field.
func Validate(ctx context.Context, db *gorm.DB, workspaceID, selfID string, in Input) (models.ConfiguredTool, error) {
	db = db.WithContext(ctx)
	t := models.ConfiguredTool{WorkspaceID: workspaceID, BaseTool: in.BaseTool}
	var err error
	if t.DisplayName, err = field.Name(in.DisplayName, "display_name", MaxDisplayNameLength); err != nil {
		return t, err
	}
	row, err := checkBaseTool(in.BaseTool)
	if err != nil {
		return t, err
	}
	if t.AgentID, err = checkAgent(db, workspaceID, in.AgentID); err != nil {
		return t, err
	}
	if t.Config, err = checkConfig(row, in.Config); err != nil {
		return t, err
	}
	inputSchema := in.InputSchema
	if strictjson.IsNull(inputSchema) {
		inputSchema = schema.DefaultInput
	}
	if _, err := schema.Compile(inputSchema, "input_schema"); err != nil {
		return t, err
	}
	if in.BaseTool == models.BaseAppTool {
		if err := checkNoInjectedRequired(inputSchema); err != nil {
			return t, err
		}
	}
	t.InputSchema = models.JSON(inputSchema)

	if row.Integration != "" {
		if t.IntegrationID, err = checkIntegration(db, workspaceID, in.IntegrationID, row.Integration, in.BaseTool); err != nil {
			return t, err
		}
	} else if in.IntegrationID != nil {
		return t, apperr.Invalidf("integration_id is only for %s",
			strings.Join(basetool.Names(func(t basetool.Tool) bool { return t.Integration != "" }), " and "))
	}

	if in.BaseTool == models.BaseAppTool {
		return checkAppTool(ctx, db, workspaceID, selfID, t, in)
	}
	for _, f := range []struct {
		name string
		set  bool
	}{
		{"bundle_id", in.BundleID != nil}, {"bundle_version", in.BundleVersion != nil}, {"binding_id", in.BindingID != nil},
		{"producer_tool_id", in.ProducerToolID != nil}, {"action_schema", !strictjson.IsNull(in.ActionSchema)},
		{"theme", !strictjson.IsNull(in.Theme)}, {"default_fullscreen", in.DefaultFullscreen},
		{"await_review", in.AwaitReview}, {"await_expiry_seconds", in.AwaitExpirySeconds != nil},
	} {
		if f.set {
			return t, apperr.Invalidf("%s is only for app_tool, not %s", f.name, in.BaseTool)
		}
	}
	return t, nil
}

// checkBaseTool returns the row of the base tool a configured tool is
// built on, refusing a name without one and a tool named directly.
func checkBaseTool(base string) (basetool.Tool, error) {
	if base == "" {
		return basetool.Tool{}, apperr.Invalidf("base_tool is required")
	}
	row, ok := basetool.Lookup(base)
	if ok && !basetool.Configurable(row) {
		return row, apperr.Invalidf("base_tool %s has nothing to configure: name it directly in a binding's tools", base)
	}
	if !ok {
		return row, apperr.Invalidf("base_tool %q is not one of %s", base, strings.Join(basetool.Names(basetool.Configurable), ", "))
	}
	return row, nil
}

func checkAgent(db *gorm.DB, workspaceID, agentID string) (string, error) {
	if agentID == "" {
		return "", apperr.Invalidf("agent_id is required")
	}
	if !models.IsID(agentID) {
		return "", apperr.Invalidf("agent_id must be a UUID")
	}
	var n int64
	if err := db.Model(&models.Agent{}).Where("id = ? AND workspace_id = ?", agentID, workspaceID).Count(&n).Error; err != nil {
		return "", fmt.Errorf("toolconfig: find agent: %w", err)
	}
	if n == 0 {
		return "", apperr.Invalidf("agent_id %s is not an agent of this workspace", agentID)
	}
	return agentID, nil
}

// checkConfig checks config's keys (any key the base tool does not take is
// refused, so a typo is caught when the tool is saved rather than when it
// runs) and the values of the keys it reads, and returns it as stored (an
// empty object when absent).
func checkConfig(row basetool.Tool, raw json.RawMessage) (models.JSON, error) {
	base := row.Name
	cfg, err := strictjson.Object(raw, "config")
	if err != nil {
		return nil, err
	}
	for k := range cfg {
		if !slices.Contains(row.RequiredConfig, k) && !slices.Contains(row.OptionalConfig, k) {
			return nil, apperr.Invalidf("config.%s is not a setting of %s", k, base)
		}
	}
	for _, k := range row.RequiredConfig {
		if strictjson.IsNull(cfg[k]) {
			return nil, apperr.Invalidf("config.%s is required for %s", k, base)
		}
	}
	text := func(k string) (string, error) {
		var s string
		if err := json.Unmarshal(cfg[k], &s); err != nil {
			return "", apperr.Invalidf("config.%s must be a string", k)
		}
		if strings.TrimSpace(s) == "" {
			return "", apperr.Invalidf("config.%s is required for %s", k, base)
		}
		return s, nil
	}
	switch base {
	case models.BasePythonCode:
		if _, err := text("code"); err != nil {
			return nil, err
		}
	case models.BaseCSVLookup:
		if _, err := text("file_name"); err != nil {
			return nil, err
		}
		if v, ok := cfg["matching_strategy"]; ok {
			var s string
			if json.Unmarshal(v, &s) != nil || (s != "exact" && s != "llm") {
				return nil, apperr.Invalidf("config.matching_strategy must be \"exact\" or \"llm\"")
			}
		}
	case models.BasePostgresQuery, models.BaseMSSQLQuery:
		q, err := text("query")
		if err != nil {
			return nil, err
		}
		if err := CheckReadOnlyQuery(row.Integration, q); err != nil {
			return nil, err
		}
	case models.BaseExtraction:
		if _, err := text("instructions"); err != nil {
			return nil, err
		}
		if _, err := schema.Compile(cfg["output_schema"], "config.output_schema"); err != nil {
			return nil, err
		}
		for _, key := range []string{"pause_on_validation", "citations"} {
			if v, ok := cfg[key]; ok {
				var b bool
				if json.Unmarshal(v, &b) != nil {
					return nil, apperr.Invalidf("config.%s must be true or false", key)
				}
			}
		}
		if v, ok := cfg["validations"]; ok {
			var list []json.RawMessage
			if json.Unmarshal(v, &list) != nil {
				return nil, apperr.Invalidf("config.validations must be an array")
			}
		}
		if _, ok := cfg["model"]; ok {
			if _, err := text("model"); err != nil {
				return nil, err
			}
		}
	}
	if cfg == nil {
		return models.JSON(`{}`), nil
	}
	return models.MustJSON(cfg), nil
}

func checkIntegration(db *gorm.DB, workspaceID string, id *string, kind, base string) (*string, error) {
	if id == nil || *id == "" {
		return nil, apperr.Invalidf("integration_id is required for %s", base)
	}
	if !models.IsID(*id) {
		return nil, apperr.Invalidf("integration_id must be a UUID")
	}
	var integ models.Integration
	err := db.Where("id = ? AND workspace_id = ?", *id, workspaceID).Take(&integ).Error
	if err := store.NotFound(err, "toolconfig: find integration", "integration"); err != nil {
		if apperr.Is(err, apperr.NotFound) {
			return nil, apperr.Invalidf("integration_id %s is not an integration of this workspace", *id)
		}
		return nil, err
	}
	if integ.Kind != kind {
		return nil, apperr.Invalidf("integration_id %s is a %s integration; %s needs a %s one", *id, integ.Kind, base, kind)
	}
	return id, nil
}

// checkAppTool checks an app tool's bundle, binding, producer and display settings.
func checkAppTool(ctx context.Context, db *gorm.DB, workspaceID, selfID string, t models.ConfiguredTool, in Input) (models.ConfiguredTool, error) {
	if in.BundleID == nil || *in.BundleID == "" {
		return t, apperr.Invalidf("bundle_id is required for app_tool")
	}
	if !models.IsID(*in.BundleID) {
		return t, apperr.Invalidf("bundle_id must be a UUID")
	}
	if in.BundleVersion != nil && *in.BundleVersion < 1 {
		return t, apperr.Invalidf("bundle_version must be 1 or more (omit it to use the newest version)")
	}
	if _, err := bundle.Resolve(ctx, db, workspaceID, *in.BundleID, in.BundleVersion); err != nil {
		if !apperr.Is(err, apperr.NotFound) {
			return t, err
		}
		if in.BundleVersion != nil {
			return t, apperr.Invalidf("bundle_id %s has no version %d in this workspace", *in.BundleID, *in.BundleVersion)
		}
		return t, apperr.Invalidf("bundle_id %s is not a bundle of this workspace", *in.BundleID)
	}
	t.BundleID, t.BundleVersion = in.BundleID, in.BundleVersion

	if in.BindingID == nil || *in.BindingID == "" {
		return t, apperr.Invalidf("binding_id is required for app_tool")
	}
	if !models.IsID(*in.BindingID) {
		return t, apperr.Invalidf("binding_id must be a UUID")
	}
	var n int64
	if err := db.Model(&models.Binding{}).Where("id = ? AND workspace_id = ?", *in.BindingID, workspaceID).Count(&n).Error; err != nil {
		return t, fmt.Errorf("toolconfig: find binding: %w", err)
	}
	if n == 0 {
		return t, apperr.Invalidf("binding_id %s is not a binding of this workspace", *in.BindingID)
	}
	t.BindingID = in.BindingID

	if in.ProducerToolID != nil {
		p := *in.ProducerToolID
		if !models.IsID(p) {
			return t, apperr.Invalidf("producer_tool_id must be a UUID")
		}
		if p == selfID {
			return t, apperr.Invalidf("producer_tool_id cannot name the app tool itself")
		}
		var producer models.ConfiguredTool
		err := db.Where("id = ? AND agent_id = ?", p, t.AgentID).Take(&producer).Error
		if err := store.NotFound(err, "toolconfig: find producer", "producer"); err != nil {
			if apperr.Is(err, apperr.NotFound) {
				return t, apperr.Invalidf("producer_tool_id %s is not a configured tool of this agent", p)
			}
			return t, err
		}
		if producer.BaseTool != models.BasePythonCode {
			return t, apperr.Invalidf("producer_tool_id %s is a %s; a producer must be a python_code_tool", p, producer.BaseTool)
		}
		t.ProducerToolID = in.ProducerToolID
	}

	for _, f := range []struct {
		name string
		in   json.RawMessage
		out  *models.JSON
	}{{"action_schema", in.ActionSchema, &t.ActionSchema}, {"theme", in.Theme, &t.Theme}} {
		obj, err := strictjson.Object(f.in, f.name)
		if err != nil {
			return t, err
		}
		if obj != nil {
			*f.out = models.JSON(f.in)
		}
	}
	t.DefaultFullscreen, t.AwaitReview = in.DefaultFullscreen, in.AwaitReview
	if in.AwaitExpirySeconds != nil {
		if !in.AwaitReview {
			return t, apperr.Invalidf("await_expiry_seconds needs await_review: true")
		}
		if s := *in.AwaitExpirySeconds; s < 1 || s > MaxAwaitExpirySeconds {
			return t, apperr.Invalidf("await_expiry_seconds must be between 1 and %d", MaxAwaitExpirySeconds)
		}
		t.AwaitExpirySeconds = in.AwaitExpirySeconds
	}
	return t, nil
}

// checkNoInjectedRequired refuses an app tool's input_schema that requires
// a key the worker injects (basetool.AppToolInjected): callers are refused
// when they send one, so a tool requiring it could never be called.
func checkNoInjectedRequired(doc json.RawMessage) error {
	var top struct {
		Required []string `json:"required"`
	}
	if json.Unmarshal(doc, &top) != nil {
		return nil // not an object with a required list: nothing to refuse
	}
	for _, k := range top.Required {
		if slices.Contains(basetool.AppToolInjected, k) {
			return apperr.Invalidf("input_schema requires %s, which the worker injects and a caller may never send: remove it from required", k)
		}
	}
	return nil
}
