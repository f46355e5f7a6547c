package session

import (
	"context"
	"fmt"
	"time"

	"gorm.io/gorm"
	"gorm.io/gorm/clause"

	"github.com/appruntime/appruntime/internal/apperr"
	"github.com/appruntime/appruntime/internal/store"
	"github.com/appruntime/appruntime/models"
)

// PreviewTTL is how long a preview session lives: short, since an admin
// previews while looking (docs/architecture.md#preview-sessions).
const PreviewTTL = 5 * time.Minute

// MaxLivePreviewsPerWorkspace is how many preview sessions of one workspace
// may be live at once; one more is refused (429 with Retry-After until the
// oldest expires), so previews never crowd the workspace's tasks out.
const MaxLivePreviewsPerWorkspace = 10

// PreviewInput names what a preview session is for: a binding of the
// workspace, minted by an admin (the console's, UserID) or with an admin
// token (TokenID); at least one of the two.
type PreviewInput struct {
	WorkspaceID string
	BindingID   string
	UserID      string
	TokenID     string
	// RecordFunc, when set, runs inside the mint's transaction once the
	// session is recorded (the audit row): its error refuses the mint, so a
	// preview is never live unaudited.
	RecordFunc func(ctx context.Context, tx *gorm.DB, c Claims) error
}

// MintPreview issues a preview session token for in: on no task, read-only
// (the runtime refuses every other verb, runtime.Authorize), living
// PreviewTTL (or the issuer's TTL when shorter). The workspace's row is
// locked while its live previews are counted, so concurrent mints never pass
// MaxLivePreviewsPerWorkspace.
func (i *Issuer) MintPreview(ctx context.Context, in PreviewInput) (string, Claims, error) {
	key, ok := i.ring.signingKey()
	if !ok {
		return "", Claims{}, apperr.NotImplementedf("session keys are not configured on this deployment")
	}
	if err := in.validate(); err != nil {
		return "", Claims{}, err
	}
	issued := time.Now().UTC()
	now := issued.Truncate(time.Second)
	c := Claims{SessionID: models.NewID(), WorkspaceID: in.WorkspaceID, BindingID: in.BindingID,
		UserID: in.UserID, ExpiresAt: now.Add(min(i.ttl, PreviewTTL)), Kind: KindPreview}
	signed, err := i.sign(key, c, now)
	if err != nil {
		return "", Claims{}, err
	}
	err = i.db.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		var ws models.Workspace
		err := tx.Clauses(clause.Locking{Strength: "UPDATE"}).Select("id").Where("id = ?", in.WorkspaceID).Take(&ws).Error
		if err := store.NotFound(err, "session: lock workspace", "workspace "+in.WorkspaceID); err != nil {
			return err
		}
		var live []models.AppSession
		if err := tx.Select("id", "expires_at").
			Where("workspace_id = ? AND kind = ? AND revoked_at IS NULL AND expires_at > ?", in.WorkspaceID, models.SessionPreview, now).
			Order("expires_at").Find(&live).Error; err != nil {
			return fmt.Errorf("session: count live previews: %w", err)
		}
		if len(live) >= MaxLivePreviewsPerWorkspace {
			wait := max(live[0].ExpiresAt.Sub(now), time.Second)
			return apperr.RateLimitedAfter(wait,
				"the workspace has %d live preview sessions, the most it may have at once; the oldest expires at %s",
				len(live), live[0].ExpiresAt.UTC().Format(time.RFC3339))
		}
		row := models.AppSession{ID: c.SessionID, WorkspaceID: c.WorkspaceID, Kind: models.SessionPreview,
			BindingID: &c.BindingID, ExpiresAt: c.ExpiresAt, CreatedAt: issued}
		if c.UserID != "" {
			row.UserID = &c.UserID
		}
		if in.TokenID != "" {
			row.TokenID = &in.TokenID
		}
		if err := tx.Omit("TaskID", "StepID").Create(&row).Error; err != nil {
			return fmt.Errorf("session: record preview session: %w", err)
		}
		if in.RecordFunc != nil {
			return in.RecordFunc(ctx, tx, c)
		}
		return nil
	})
	if err != nil {
		return "", Claims{}, err
	}
	return signed, c, nil
}

func (in PreviewInput) validate() error {
	for _, f := range []struct{ name, value string }{{"workspace_id", in.WorkspaceID}, {"binding_id", in.BindingID}} {
		if !models.IsID(f.value) {
			return apperr.Invalidf("session %s must be a UUID, got %q", f.name, f.value)
		}
	}
	for _, f := range []struct{ name, value string }{{"user_id", in.UserID}, {"token_id", in.TokenID}} {
		if f.value != "" && !models.IsID(f.value) {
			return apperr.Invalidf("session %s must be a UUID, got %q", f.name, f.value)
		}
	}
	if in.UserID == "" && in.TokenID == "" {
		return apperr.Invalidf("a preview session is minted by an admin: a user or an admin token is required")
	}
	return nil
}
