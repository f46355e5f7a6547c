package admin

import (
	"context"
	"fmt"
	"strings"
	"time"

	"gorm.io/gorm"
	"gorm.io/gorm/clause"

	"github.com/appruntime/appruntime/internal/apperr"
	"github.com/appruntime/appruntime/internal/audit"
	"github.com/appruntime/appruntime/internal/field"
	"github.com/appruntime/appruntime/internal/store"
	"github.com/appruntime/appruntime/internal/strictjson"
	"github.com/appruntime/appruntime/models"
)

// ReviewPoolInput is a review pool as the admin API takes it.
type ReviewPoolInput struct {
	Name string `json:"name"`
	// The pool's notifications of waiting work and its escalation
	// (docs/admins.md#notifications-of-waiting-work); null or absent is off.
	WaitThresholdSeconds *int     `json:"wait_threshold_seconds"`
	EscalateAfterSeconds *int     `json:"escalate_after_seconds"`
	EscalateToPoolID     *string  `json:"escalate_to_pool_id"`
	NotifyWebhookURL     string   `json:"notify_webhook_url"`
	NotifyEmails         []string `json:"notify_emails"`
}

// ReviewPoolView is a review pool as the admin API shows it: its members'
// and agents' ids, each sorted (docs/admins.md#review-pools-and-the-claim-limit).
type ReviewPoolView struct {
	ID                   string   `json:"id"`
	Name                 string   `json:"name"`
	UserIDs              []string `json:"user_ids"`
	AgentIDs             []string `json:"agent_ids"`
	WaitThresholdSeconds *int     `json:"wait_threshold_seconds"`
	EscalateAfterSeconds *int     `json:"escalate_after_seconds"`
	EscalateToPoolID     *string  `json:"escalate_to_pool_id"`
	NotifyWebhookURL     string   `json:"notify_webhook_url"`
	NotifyEmails         []string `json:"notify_emails"`
	// NotifyWebhookSecretSet says the webhook has a signing secret;
	// NotifyWebhookSecret carries it once, in the reply that made it.
	NotifyWebhookSecretSet bool      `json:"notify_webhook_secret_set"`
	NotifyWebhookSecret    string    `json:"notify_webhook_secret,omitempty"`
	CreatedAt              time.Time `json:"created_at"`
	UpdatedAt              time.Time `json:"updated_at"`
}

// input returns the view's settings as an input, the base a merge patch
// applies to.
func (v ReviewPoolView) input() ReviewPoolInput {
	return ReviewPoolInput{Name: v.Name, WaitThresholdSeconds: v.WaitThresholdSeconds, EscalateAfterSeconds: v.EscalateAfterSeconds,
		EscalateToPoolID: v.EscalateToPoolID, NotifyWebhookURL: v.NotifyWebhookURL, NotifyEmails: v.NotifyEmails}
}

// ListReviewPools returns the workspace's review pools by name.
func (s *Service) ListReviewPools(ctx context.Context, workspaceID string) ([]ReviewPoolView, error) {
	var rows []models.ReviewPool
	db := s.st.DB.WithContext(ctx)
	if err := db.Where("workspace_id = ?", workspaceID).Order("name").Find(&rows).Error; err != nil {
		return nil, fmt.Errorf("admin: list review pools: %w", err)
	}
	return s.reviewPoolViews(ctx, db, rows)
}

// GetReviewPool returns a review pool of the workspace.
func (s *Service) GetReviewPool(ctx context.Context, workspaceID, id string) (ReviewPoolView, error) {
	return s.reviewPoolView(ctx, s.st.DB, workspaceID, id)
}

func (s *Service) reviewPoolView(ctx context.Context, db *gorm.DB, workspaceID, id string) (ReviewPoolView, error) {
	var p models.ReviewPool
	if err := take(ctx, db, &p, workspaceID, id, "review pool"); err != nil {
		return ReviewPoolView{}, err
	}
	views, err := s.reviewPoolViews(ctx, db.WithContext(ctx), []models.ReviewPool{p})
	if err != nil {
		return ReviewPoolView{}, err
	}
	return views[0], nil
}

// reviewPoolViews reads the members and agents of pools in two queries.
func (s *Service) reviewPoolViews(_ context.Context, db *gorm.DB, pools []models.ReviewPool) ([]ReviewPoolView, error) {
	out := make([]ReviewPoolView, len(pools))
	ids := make([]string, len(pools))
	at := map[string]int{}
	for i, p := range pools {
		out[i] = ReviewPoolView{ID: p.ID, Name: p.Name, UserIDs: []string{}, AgentIDs: []string{}, CreatedAt: p.CreatedAt, UpdatedAt: p.UpdatedAt,
			WaitThresholdSeconds: p.WaitThresholdSeconds, EscalateAfterSeconds: p.EscalateAfterSeconds, EscalateToPoolID: p.EscalateToPoolID,
			NotifyWebhookURL: p.NotifyWebhookURL, NotifyEmails: []string{}, NotifyWebhookSecretSet: len(p.NotifyWebhookSecretEnc) > 0}
		if p.NotifyEmails != "" {
			out[i].NotifyEmails = strings.Split(p.NotifyEmails, ",")
		}
		ids[i], at[p.ID] = p.ID, i
	}
	if len(ids) == 0 {
		return out, nil
	}
	var members []models.ReviewPoolMember
	if err := db.Where("pool_id IN ?", ids).Order("user_id").Find(&members).Error; err != nil {
		return nil, fmt.Errorf("admin: list review pool members: %w", err)
	}
	for _, m := range members {
		out[at[m.PoolID]].UserIDs = append(out[at[m.PoolID]].UserIDs, m.UserID)
	}
	var agents []models.AgentReviewPool
	if err := db.Where("pool_id IN ?", ids).Order("agent_id").Find(&agents).Error; err != nil {
		return nil, fmt.Errorf("admin: list review pool agents: %w", err)
	}
	for _, a := range agents {
		out[at[a.PoolID]].AgentIDs = append(out[at[a.PoolID]].AgentIDs, a.AgentID)
	}
	return out, nil
}

// saveReviewPoolError turns the name's uniqueness violation into a 409.
func saveReviewPoolError(err error, name string) error {
	if store.IsUniqueViolation(err) {
		return apperr.Conflictf("name %q is already taken by another review pool of this workspace", name)
	}
	return fmt.Errorf("admin: save review pool: %w", err)
}

// CreateReviewPool creates a review pool of the workspace; its name is
// unique in the workspace.
func (s *Service) CreateReviewPool(ctx context.Context, workspaceID, actor string, in ReviewPoolInput) (ReviewPoolView, error) {
	name, err := field.Name(in.Name, "name", MaxNameLength)
	if err != nil {
		return ReviewPoolView{}, err
	}
	now := time.Now().UTC()
	p := models.ReviewPool{ID: models.NewID(), WorkspaceID: workspaceID, Name: name, CreatedAt: now, UpdatedAt: now}
	e := audit.Entry{WorkspaceID: workspaceID, Actor: actor, Action: "review_pool.create", TargetType: "review_pool", TargetID: p.ID,
		Detail: map[string]any{"name": name}}
	var v ReviewPoolView
	err = s.change(ctx, &e, func(tx *gorm.DB) error {
		if err := tx.Create(&p).Error; err != nil {
			return saveReviewPoolError(err, name)
		}
		settings, secret, err := s.poolSettings(ctx, tx, p, in)
		if err != nil {
			return err
		}
		if err := savePoolSettings(tx, p.ID, settings); err != nil {
			return err
		}
		v, err = s.reviewPoolView(ctx, tx, workspaceID, p.ID)
		v.NotifyWebhookSecret = secret
		return err
	})
	return v, err
}

// UpdateReviewPool applies a merge patch to a review pool of the workspace.
func (s *Service) UpdateReviewPool(ctx context.Context, workspaceID, actor, id string, patch []byte) (ReviewPoolView, error) {
	e := audit.Entry{WorkspaceID: workspaceID, Actor: actor, Action: "review_pool.update", TargetType: "review_pool", TargetID: id}
	var v ReviewPoolView
	err := s.change(ctx, &e, func(tx *gorm.DB) error {
		var p models.ReviewPool
		if err := take(ctx, tx, &p, workspaceID, id, "review pool"); err != nil {
			return err
		}
		before, err := s.reviewPoolView(ctx, tx, workspaceID, id)
		if err != nil {
			return err
		}
		var in ReviewPoolInput
		if err := strictjson.MergeInto(before.input(), patch, &in); err != nil {
			return err
		}
		name, err := field.Name(in.Name, "name", MaxNameLength)
		if err != nil {
			return err
		}
		settings, secret, err := s.poolSettings(ctx, tx, p, in)
		if err != nil {
			return err
		}
		e.Detail = map[string]any{"name": name, "wait_threshold_seconds": settings.WaitThresholdSeconds,
			"escalate_after_seconds": settings.EscalateAfterSeconds, "escalate_to_pool_id": settings.EscalateToPoolID,
			"notify_webhook_url": settings.NotifyWebhookURL, "notify_emails": settings.NotifyEmails}
		if err := tx.Model(&p).Updates(map[string]any{"name": name, "updated_at": time.Now().UTC()}).Error; err != nil {
			return saveReviewPoolError(err, name)
		}
		if err := savePoolSettings(tx, p.ID, settings); err != nil {
			return err
		}
		v, err = s.reviewPoolView(ctx, tx, workspaceID, id)
		v.NotifyWebhookSecret = secret
		return err
	})
	return v, err
}

// DeleteReviewPool deletes a review pool of the workspace with its
// memberships, agent assignments and task routes: a task it was the only
// pool of is anyone's again.
func (s *Service) DeleteReviewPool(ctx context.Context, workspaceID, actor, id string) error {
	e := audit.Entry{WorkspaceID: workspaceID, Actor: actor, Action: "review_pool.delete", TargetType: "review_pool", TargetID: id}
	return s.change(ctx, &e, func(tx *gorm.DB) error {
		var p models.ReviewPool
		if err := take(ctx, tx, &p, workspaceID, id, "review pool"); err != nil {
			return err
		}
		e.Detail = map[string]any{"name": p.Name}
		if err := tx.Delete(&models.ReviewPool{}, "id = ?", p.ID).Error; err != nil {
			return fmt.Errorf("admin: delete review pool: %w", err)
		}
		return nil
	})
}

// ReviewPoolLink names what a pool is linked to: a member (a user) or an
// agent whose review tasks it takes.
type ReviewPoolLink string

// The links of a review pool.
const (
	PoolMember ReviewPoolLink = "member"
	PoolAgent  ReviewPoolLink = "agent"
)

// LinkReviewPool adds (add) or removes a user (PoolMember) or an agent
// (PoolAgent) of the workspace to or from review pool poolID, idempotently,
// and returns the pool.
func (s *Service) LinkReviewPool(ctx context.Context, workspaceID, actor, poolID string, link ReviewPoolLink, targetID string, add bool) (ReviewPoolView, error) {
	verb := "remove"
	if add {
		verb = "add"
	}
	e := audit.Entry{WorkspaceID: workspaceID, Actor: actor, Action: "review_pool." + string(link) + "_" + verb, TargetType: "review_pool",
		TargetID: poolID, Detail: map[string]any{string(link) + "_id": targetID}}
	var v ReviewPoolView
	err := s.change(ctx, &e, func(tx *gorm.DB) error {
		var p models.ReviewPool
		if err := take(ctx, tx, &p, workspaceID, poolID, "review pool"); err != nil {
			return err
		}
		var row any
		switch link {
		case PoolMember:
			if err := take(ctx, tx, &models.User{}, workspaceID, targetID, "user"); err != nil {
				return err
			}
			row = &models.ReviewPoolMember{PoolID: p.ID, UserID: targetID}
		case PoolAgent:
			if err := take(ctx, tx, &models.Agent{}, workspaceID, targetID, "agent"); err != nil {
				return err
			}
			row = &models.AgentReviewPool{AgentID: targetID, PoolID: p.ID}
		default:
			return fmt.Errorf("admin: unknown review pool link %q", link)
		}
		var err error
		if add {
			err = tx.Clauses(clause.OnConflict{DoNothing: true}).Create(row).Error
		} else {
			err = tx.Delete(row).Error
		}
		if err != nil {
			return fmt.Errorf("admin: %s review pool %s: %w", verb, link, err)
		}
		v, err = s.reviewPoolView(ctx, tx, workspaceID, p.ID)
		return err
	})
	return v, err
}
