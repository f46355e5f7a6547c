package admin

import (
	"context"
	"fmt"
	"time"

	"gorm.io/gorm"

	"github.com/appruntime/appruntime/internal/apperr"
	"github.com/appruntime/appruntime/internal/audit"
	"github.com/appruntime/appruntime/internal/auth"
	"github.com/appruntime/appruntime/internal/field"
	"github.com/appruntime/appruntime/internal/store"
	"github.com/appruntime/appruntime/internal/strictjson"
	"github.com/appruntime/appruntime/models"
)

// WorkspaceInput is a workspace as the admin API takes it.
type WorkspaceInput struct {
	Name string `json:"name"`
	// ReviewClaimLimit is how many live review claims one reviewer may
	// hold (1..100); zero on create is the default, 1
	// (docs/admins.md#review-pools-and-the-claim-limit).
	ReviewClaimLimit int `json:"review_claim_limit"`
}

// WorkspaceView is a workspace as the admin API shows it.
type WorkspaceView struct {
	ID               string    `json:"id"`
	Name             string    `json:"name"`
	ReviewClaimLimit int       `json:"review_claim_limit"`
	CreatedAt        time.Time `json:"created_at"`
	UpdatedAt        time.Time `json:"updated_at"`
}

// NewWorkspace is the reply to creating a workspace: it carries the new
// workspace's first admin token, shown this once.
type NewWorkspace struct {
	WorkspaceView
	AdminToken string `json:"admin_token"`
}

func workspaceView(w models.Workspace) WorkspaceView {
	return WorkspaceView{ID: w.ID, Name: w.Name, ReviewClaimLimit: w.ReviewClaimLimit, CreatedAt: w.CreatedAt, UpdatedAt: w.UpdatedAt}
}

// checkReviewClaimLimit refuses a claim limit outside 1..100.
func checkReviewClaimLimit(n int) error {
	if n < 1 || n > models.MaxReviewClaimLimit {
		return apperr.Invalidf("review_claim_limit must be between 1 and %d, got %d", models.MaxReviewClaimLimit, n)
	}
	return nil
}

// ListWorkspaces returns the workspaces an admin token sees: its own.
func (s *Service) ListWorkspaces(ctx context.Context, workspaceID string) ([]WorkspaceView, error) {
	w, err := s.GetWorkspace(ctx, workspaceID, workspaceID)
	if err != nil {
		return nil, err
	}
	return []WorkspaceView{w}, nil
}

// GetWorkspace returns the caller's workspace; any other id is not found.
func (s *Service) GetWorkspace(ctx context.Context, workspaceID, id string) (WorkspaceView, error) {
	w, err := s.ownWorkspace(ctx, s.st.DB, workspaceID, id)
	if err != nil {
		return WorkspaceView{}, err
	}
	return workspaceView(w), nil
}

func (s *Service) ownWorkspace(ctx context.Context, db *gorm.DB, workspaceID, id string) (models.Workspace, error) {
	var w models.Workspace
	if id != workspaceID || !models.IsID(id) {
		return w, apperr.NotFoundf("workspace not found")
	}
	err := db.WithContext(ctx).Where("id = ?", id).Take(&w).Error
	return w, store.NotFound(err, "admin: find workspace", "workspace")
}

// CreateWorkspace creates a new, empty workspace and issues its first admin
// token, so that whoever created it can administer it. The caller's own
// workspace is unaffected; actor is recorded in the new workspace's audit log.
func (s *Service) CreateWorkspace(ctx context.Context, actor string, in WorkspaceInput) (NewWorkspace, error) {
	name, err := field.Name(in.Name, "name", MaxNameLength)
	if err != nil {
		return NewWorkspace{}, err
	}
	if in.ReviewClaimLimit == 0 {
		in.ReviewClaimLimit = models.DefaultReviewClaimLimit
	}
	if err := checkReviewClaimLimit(in.ReviewClaimLimit); err != nil {
		return NewWorkspace{}, err
	}
	w := models.Workspace{ID: models.NewID(), Name: name, ReviewClaimLimit: in.ReviewClaimLimit}
	var secret string
	e := audit.Entry{WorkspaceID: w.ID, Actor: actor, Action: "workspace.create", TargetType: "workspace", TargetID: w.ID,
		Detail: map[string]any{"name": name}}
	err = s.change(ctx, &e, func(tx *gorm.DB) error {
		if err := tx.Create(&w).Error; err != nil {
			return fmt.Errorf("admin: create workspace: %w", err)
		}
		_, secret, err = auth.IssueToken(ctx, tx, w.ID, models.ScopeAdmin, "first admin token", nil, nil)
		return err
	})
	if err != nil {
		return NewWorkspace{}, err
	}
	return NewWorkspace{WorkspaceView: workspaceView(w), AdminToken: secret}, nil
}

// UpdateWorkspace applies a merge patch to the caller's workspace.
func (s *Service) UpdateWorkspace(ctx context.Context, workspaceID, actor, id string, patch []byte) (WorkspaceView, error) {
	var w models.Workspace
	e := audit.Entry{WorkspaceID: workspaceID, Actor: actor, Action: "workspace.update", TargetType: "workspace", TargetID: id}
	err := s.change(ctx, &e, func(tx *gorm.DB) error {
		var err error
		if w, err = s.ownWorkspace(ctx, tx, workspaceID, id); err != nil {
			return err
		}
		var in WorkspaceInput
		if err := strictjson.MergeInto(WorkspaceInput{Name: w.Name, ReviewClaimLimit: w.ReviewClaimLimit}, patch, &in); err != nil {
			return err
		}
		if w.Name, err = field.Name(in.Name, "name", MaxNameLength); err != nil {
			return err
		}
		if err := checkReviewClaimLimit(in.ReviewClaimLimit); err != nil {
			return err
		}
		e.Detail = map[string]any{"name": w.Name, "review_claim_limit": in.ReviewClaimLimit}
		if err := tx.Model(&w).Updates(map[string]any{"name": w.Name, "review_claim_limit": in.ReviewClaimLimit,
			"updated_at": time.Now().UTC()}).Error; err != nil {
			return fmt.Errorf("admin: update workspace: %w", err)
		}
		return tx.Where("id = ?", w.ID).Take(&w).Error
	})
	if err != nil {
		return WorkspaceView{}, err
	}
	return workspaceView(w), nil
}

// DeleteWorkspace deletes the caller's workspace and everything in it,
// including the token that asked. The audit entry outlives it (it belongs to
// no workspace).
func (s *Service) DeleteWorkspace(ctx context.Context, workspaceID, actor, id string) error {
	e := audit.Entry{Actor: actor, Action: "workspace.delete", TargetType: "workspace", TargetID: id}
	return s.change(ctx, &e, func(tx *gorm.DB) error {
		w, err := s.ownWorkspace(ctx, tx, workspaceID, id)
		if err != nil {
			return err
		}
		e.Detail = map[string]any{"name": w.Name}
		// Its tokens go with it: every replica's cache must refuse them.
		if err := s.revokeCachedTokensOf(ctx, tx, "workspace_id", w.ID); err != nil {
			return err
		}
		if err := tx.Delete(&models.Workspace{}, "id = ?", w.ID).Error; err != nil {
			return fmt.Errorf("admin: delete workspace: %w", err)
		}
		return nil
	})
}
