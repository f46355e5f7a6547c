// Package toolconfig holds configured tools: an agent's instances of the
// base tools with their bound settings (code, file, query, integration,
// input schema; for an app tool its bundle, binding, producer and display
// settings). The admin API and the console save them through the same
// validation; the agent API reads them when it builds an artifact.
package toolconfig

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"gorm.io/gorm"

	"github.com/appruntime/appruntime/internal/apperr"
	"github.com/appruntime/appruntime/internal/audit"
	"github.com/appruntime/appruntime/internal/store"
	"github.com/appruntime/appruntime/internal/strictjson"
	"github.com/appruntime/appruntime/models"
)

// MaxDisplayNameLength bounds a configured tool's display name.
const MaxDisplayNameLength = 200

// MaxAwaitExpirySeconds bounds await_expiry_seconds: a parked task is
// released automatically within a year at the latest.
const MaxAwaitExpirySeconds = 365 * 24 * 60 * 60

// Input is a configured tool as the admin API takes it; an update is a merge
// patch over the stored tool in this same shape.
type Input struct {
	AgentID     string          `json:"agent_id"`
	DisplayName string          `json:"display_name"`
	BaseTool    string          `json:"base_tool"`
	Config      json.RawMessage `json:"config,omitempty"`
	InputSchema json.RawMessage `json:"input_schema,omitempty"`
	// IntegrationID is the data source of postgres_execute_query and mssql_execute_query.
	IntegrationID *string `json:"integration_id,omitempty"`

	// App tool settings.
	BundleID           *string         `json:"bundle_id,omitempty"`
	BundleVersion      *int            `json:"bundle_version,omitempty"` // nil: the newest version
	BindingID          *string         `json:"binding_id,omitempty"`
	ProducerToolID     *string         `json:"producer_tool_id,omitempty"`
	ActionSchema       json.RawMessage `json:"action_schema,omitempty"`
	Theme              json.RawMessage `json:"theme,omitempty"`
	DefaultFullscreen  bool            `json:"default_fullscreen,omitempty"`
	AwaitReview        bool            `json:"await_review,omitempty"`
	AwaitExpirySeconds *int            `json:"await_expiry_seconds,omitempty"`
}

// View is a configured tool as the admin API shows it.
type View struct {
	ID                 string          `json:"id"`
	AgentID            string          `json:"agent_id"`
	DisplayName        string          `json:"display_name"`
	BaseTool           string          `json:"base_tool"`
	Config             json.RawMessage `json:"config"`
	InputSchema        json.RawMessage `json:"input_schema"`
	IntegrationID      *string         `json:"integration_id"`
	BundleID           *string         `json:"bundle_id"`
	BundleVersion      *int            `json:"bundle_version"`
	BindingID          *string         `json:"binding_id"`
	ProducerToolID     *string         `json:"producer_tool_id"`
	ActionSchema       json.RawMessage `json:"action_schema"`
	Theme              json.RawMessage `json:"theme"`
	DefaultFullscreen  bool            `json:"default_fullscreen"`
	AwaitReview        bool            `json:"await_review"`
	AwaitExpirySeconds *int            `json:"await_expiry_seconds"`
	CreatedAt          time.Time       `json:"created_at"`
	UpdatedAt          time.Time       `json:"updated_at"`
}

// ViewOf renders a stored configured tool.
func ViewOf(t models.ConfiguredTool) View {
	return View{
		ID: t.ID, AgentID: t.AgentID, DisplayName: t.DisplayName, BaseTool: t.BaseTool,
		Config: orEmptyObject(t.Config), InputSchema: raw(t.InputSchema), IntegrationID: t.IntegrationID,
		BundleID: t.BundleID, BundleVersion: t.BundleVersion, BindingID: t.BindingID, ProducerToolID: t.ProducerToolID,
		ActionSchema: raw(t.ActionSchema), Theme: raw(t.Theme),
		DefaultFullscreen: t.DefaultFullscreen, AwaitReview: t.AwaitReview, AwaitExpirySeconds: t.AwaitExpirySeconds,
		CreatedAt: t.CreatedAt, UpdatedAt: t.UpdatedAt,
	}
}

// inputOf is the stored tool in the shape an update patches.
func inputOf(t models.ConfiguredTool) Input {
	return Input{
		AgentID: t.AgentID, DisplayName: t.DisplayName, BaseTool: t.BaseTool, Config: raw(t.Config),
		InputSchema: raw(t.InputSchema), IntegrationID: t.IntegrationID, BundleID: t.BundleID,
		BundleVersion: t.BundleVersion, BindingID: t.BindingID, ProducerToolID: t.ProducerToolID,
		ActionSchema: raw(t.ActionSchema), Theme: raw(t.Theme), DefaultFullscreen: t.DefaultFullscreen,
		AwaitReview: t.AwaitReview, AwaitExpirySeconds: t.AwaitExpirySeconds,
	}
}

func raw(j models.JSON) json.RawMessage {
	if len(j) == 0 {
		return nil
	}
	return json.RawMessage(j)
}

func orEmptyObject(j models.JSON) json.RawMessage {
	if len(j) == 0 {
		return json.RawMessage(`{}`)
	}
	return json.RawMessage(j)
}

// Service saves and reads configured tools.
type Service struct {
	st *store.Store
}

// NewService returns a configured-tool service on st.
func NewService(st *store.Store) *Service { return &Service{st: st} }

// Create validates and stores a configured tool in the workspace.
func (s *Service) Create(ctx context.Context, workspaceID, actor string, in Input) (View, error) {
	var out models.ConfiguredTool
	err := s.st.Tx(ctx, func(tx *gorm.DB) error {
		t, err := Validate(ctx, tx, workspaceID, "", in)
		if err != nil {
			return err
		}
		t.ID = models.NewID()
		if err := tx.Create(&t).Error; err != nil {
			return saveError(err, t)
		}
		out = t
		return audit.Record(ctx, tx, audit.Entry{
			WorkspaceID: workspaceID, Actor: actor, Action: "configured_tool.create", TargetType: "configured_tool",
			TargetID: t.ID, Detail: map[string]any{"display_name": t.DisplayName, "base_tool": t.BaseTool, "agent_id": t.AgentID},
		})
	})
	if err != nil {
		return View{}, err
	}
	return ViewOf(out), nil
}

// Update applies a top-level merge patch (fields named replace the stored
// ones, null clears) and validates the result as a whole. The agent and the
// base tool of a configured tool cannot change.
func (s *Service) Update(ctx context.Context, workspaceID, actor, id string, patch []byte) (View, error) {
	var out models.ConfiguredTool
	err := s.st.Tx(ctx, func(tx *gorm.DB) error {
		cur, err := find(ctx, tx, workspaceID, id)
		if err != nil {
			return err
		}
		var in Input
		if err := strictjson.MergeInto(inputOf(cur), patch, &in); err != nil {
			return err
		}
		if in.AgentID != cur.AgentID {
			return apperr.Invalidf("agent_id cannot change; create a configured tool for the other agent")
		}
		if in.BaseTool != cur.BaseTool {
			return apperr.Invalidf("base_tool cannot change; create a new configured tool")
		}
		t, err := Validate(ctx, tx, workspaceID, cur.ID, in)
		if err != nil {
			return err
		}
		t.ID, t.CreatedAt = cur.ID, cur.CreatedAt
		if err := tx.Select("*").Updates(&t).Error; err != nil {
			return saveError(err, t)
		}
		out = t
		return audit.Record(ctx, tx, audit.Entry{
			WorkspaceID: workspaceID, Actor: actor, Action: "configured_tool.update", TargetType: "configured_tool",
			TargetID: t.ID, Detail: map[string]any{"display_name": t.DisplayName, "patch": json.RawMessage(patch)},
		})
	})
	if err != nil {
		return View{}, err
	}
	return ViewOf(out), nil
}

// saveError turns the display-name uniqueness violation into a 409.
func saveError(err error, t models.ConfiguredTool) error {
	if store.IsUniqueViolation(err) {
		return apperr.Conflictf("display_name %q is already used by another configured tool of this agent", t.DisplayName)
	}
	return fmt.Errorf("toolconfig: save: %w", err)
}

// Get returns a configured tool of the workspace.
func (s *Service) Get(ctx context.Context, workspaceID, id string) (View, error) {
	t, err := find(ctx, s.st.DB, workspaceID, id)
	if err != nil {
		return View{}, err
	}
	return ViewOf(t), nil
}

// List returns the workspace's configured tools by display name, only
// agentID's when it is not empty.
func (s *Service) List(ctx context.Context, workspaceID, agentID string) ([]View, error) {
	q := s.st.DB.WithContext(ctx).Where("workspace_id = ?", workspaceID)
	if agentID != "" {
		if !models.IsID(agentID) {
			return nil, apperr.Invalidf("agent_id must be a UUID")
		}
		q = q.Where("agent_id = ?", agentID)
	}
	var rows []models.ConfiguredTool
	if err := q.Order("display_name, id").Find(&rows).Error; err != nil {
		return nil, fmt.Errorf("toolconfig: list: %w", err)
	}
	out := make([]View, 0, len(rows))
	for _, t := range rows {
		out = append(out, ViewOf(t))
	}
	return out, nil
}

// Delete removes a configured tool of the workspace. Steps that ran it keep
// their rows (their configured_tool_id is cleared), and an app tool that
// named it as producer loses its producer.
func (s *Service) Delete(ctx context.Context, workspaceID, actor, id string) error {
	return s.st.Tx(ctx, func(tx *gorm.DB) error {
		t, err := find(ctx, tx, workspaceID, id)
		if err != nil {
			return err
		}
		if err := tx.Delete(&models.ConfiguredTool{}, "id = ?", t.ID).Error; err != nil {
			return fmt.Errorf("toolconfig: delete: %w", err)
		}
		return audit.Record(ctx, tx, audit.Entry{
			WorkspaceID: workspaceID, Actor: actor, Action: "configured_tool.delete", TargetType: "configured_tool",
			TargetID: t.ID, Detail: map[string]any{"display_name": t.DisplayName, "base_tool": t.BaseTool},
		})
	})
}

// find loads a configured tool of the workspace; another workspace's is not found.
func find(ctx context.Context, db *gorm.DB, workspaceID, id string) (models.ConfiguredTool, error) {
	var t models.ConfiguredTool
	if !models.IsID(id) {
		return t, apperr.NotFoundf("configured tool not found")
	}
	err := db.WithContext(ctx).Where("id = ? AND workspace_id = ?", id, workspaceID).Take(&t).Error
	return t, store.NotFound(err, "toolconfig: find", "configured tool")
}
