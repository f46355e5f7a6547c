package bundle

import (
	"context"
	"fmt"

	"github.com/appruntime/appruntime/models"
)

// MaxUsesShown bounds the uses Uses returns: the bundle page lists them,
// and a bundle shared by more tools than that says so.
const MaxUsesShown = 200

// Use is a configured tool that mounts a bundle: which version it pins
// (0: always the newest) and the binding its app calls through, if any.
type Use struct {
	ToolID      string `json:"tool_id"`
	ToolName    string `json:"tool_name"`
	AgentID     string `json:"agent_id"`
	Version     int    `json:"version"`
	BindingID   string `json:"binding_id,omitempty"`
	BindingName string `json:"binding_name,omitempty"`
}

// Uses returns the configured tools of the workspace that mount the bundle,
// by name, with their bindings' names, in one query.
func (s *Service) Uses(ctx context.Context, workspaceID, bundleID string) ([]Use, error) {
	var rows []struct {
		ID            string
		DisplayName   string
		AgentID       string
		BundleVersion *int
		BindingID     *string
		BindingName   *string
	}
	err := s.st.DB.WithContext(ctx).Model(&models.ConfiguredTool{}).
		Select("configured_tools.id, configured_tools.display_name, configured_tools.agent_id, configured_tools.bundle_version, configured_tools.binding_id, bindings.name AS binding_name").
		Joins("LEFT JOIN bindings ON bindings.id = configured_tools.binding_id AND bindings.workspace_id = configured_tools.workspace_id").
		Where("configured_tools.workspace_id = ? AND configured_tools.bundle_id = ?", workspaceID, bundleID).
		Order("configured_tools.display_name, configured_tools.id").Limit(MaxUsesShown).
		Scan(&rows).Error
	if err != nil {
		return nil, fmt.Errorf("bundle: uses of %s: %w", bundleID, err)
	}
	out := make([]Use, 0, len(rows))
	for _, r := range rows {
		u := Use{ToolID: r.ID, ToolName: r.DisplayName, AgentID: r.AgentID}
		if r.BundleVersion != nil {
			u.Version = *r.BundleVersion
		}
		if r.BindingID != nil {
			u.BindingID = *r.BindingID
		}
		if r.BindingName != nil {
			u.BindingName = *r.BindingName
		}
		out = append(out, u)
	}
	return out, nil
}
