package binding

import (
	"context"
	"fmt"

	"gorm.io/gorm"

	"github.com/appruntime/appruntime/internal/bindingspec"
	"github.com/appruntime/appruntime/models"
)

// StoredUnscoped is an Unscoped write op of a saved binding.
type StoredUnscoped struct {
	WorkspaceID string
	BindingID   string
	BindingName string
	bindingspec.Unscoped
}

// FindUnscopedWrites returns the write ops of every saved binding, in every
// workspace, that break the rule (bindings saved before it existed), by
// binding id. A stored document that no longer decodes is an error.
func FindUnscopedWrites(ctx context.Context, db *gorm.DB) ([]StoredUnscoped, error) {
	var rows []models.Binding
	if err := db.WithContext(ctx).Select("id", "workspace_id", "name", "allowed_operations").
		Order("id").Find(&rows).Error; err != nil {
		return nil, fmt.Errorf("binding: list bindings: %w", err)
	}
	var out []StoredUnscoped
	for _, r := range rows {
		var spec bindingspec.Spec
		if err := bindingspec.DecodeStored(r.AllowedOperations, &spec); err != nil {
			return nil, fmt.Errorf("binding %s: %w", r.ID, err)
		}
		for _, u := range bindingspec.UnscopedWrites(spec) {
			out = append(out, StoredUnscoped{WorkspaceID: r.WorkspaceID, BindingID: r.ID, BindingName: r.Name, Unscoped: u})
		}
	}
	return out, nil
}
