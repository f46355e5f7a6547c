package admin

import (
	"context"
	"fmt"
	"net/mail"
	"strings"

	"gorm.io/gorm"

	"github.com/appruntime/appruntime/internal/apperr"
	"github.com/appruntime/appruntime/internal/audit"
	"github.com/appruntime/appruntime/internal/webhook"
	"github.com/appruntime/appruntime/models"
)

// The bounds of a pool's notification settings
// (docs/admins.md#notifications-of-waiting-work).
const (
	// MinPoolThreshold and MaxPoolThreshold bound a wait or escalation
	// threshold in seconds: a minute to 30 days.
	MinPoolThreshold = 60
	MaxPoolThreshold = 30 * 24 * 3600
	// MaxPoolEmails bounds a pool's email addresses.
	MaxPoolEmails = 20
)

// poolSettings checks in's notification settings for pool p of the
// workspace and returns them as stored, keeping p's sealed webhook secret;
// a webhook URL set where there was none gets a fresh secret, returned
// (empty otherwise) for the reply to show once.
func (s *Service) poolSettings(ctx context.Context, tx *gorm.DB, p models.ReviewPool, in ReviewPoolInput) (models.ReviewPoolSettings, string, error) {
	out := models.ReviewPoolSettings{NotifyWebhookSecretEnc: p.NotifyWebhookSecretEnc}
	for _, t := range []struct {
		v    *int
		name string
	}{{in.WaitThresholdSeconds, "wait_threshold_seconds"}, {in.EscalateAfterSeconds, "escalate_after_seconds"}} {
		if t.v != nil && (*t.v < MinPoolThreshold || *t.v > MaxPoolThreshold) {
			return out, "", apperr.Invalidf("%s must be between %d and %d seconds, got %d", t.name, MinPoolThreshold, MaxPoolThreshold, *t.v)
		}
	}
	out.WaitThresholdSeconds, out.EscalateAfterSeconds = in.WaitThresholdSeconds, in.EscalateAfterSeconds
	target := ""
	if in.EscalateToPoolID != nil {
		target = strings.TrimSpace(*in.EscalateToPoolID)
	}
	switch {
	case (target == "") != (in.EscalateAfterSeconds == nil):
		return out, "", apperr.Invalidf("escalate_after_seconds and escalate_to_pool_id go together: set both or neither")
	case target == p.ID:
		return out, "", apperr.Invalidf("escalate_to_pool_id must name another pool, not this one")
	case target != "":
		var to models.ReviewPool
		if err := take(ctx, tx, &to, p.WorkspaceID, target, "review pool"); err != nil {
			return out, "", apperr.Invalidf("escalate_to_pool_id %q is not a review pool of this workspace", target)
		}
		out.EscalateToPoolID = &to.ID
	}
	if in.WaitThresholdSeconds != nil && in.EscalateAfterSeconds != nil && *in.EscalateAfterSeconds <= *in.WaitThresholdSeconds {
		return out, "", apperr.Invalidf("escalate_after_seconds (%d) must be longer than wait_threshold_seconds (%d)",
			*in.EscalateAfterSeconds, *in.WaitThresholdSeconds)
	}
	u, err := checkHTTPURL(in.NotifyWebhookURL, "notify_webhook_url", true)
	if err != nil {
		return out, "", err
	}
	out.NotifyWebhookURL = u
	emails, err := checkEmails(in.NotifyEmails)
	if err != nil {
		return out, "", err
	}
	out.NotifyEmails = strings.Join(emails, ",")
	if out.NotifyWebhookURL == "" || len(out.NotifyWebhookSecretEnc) > 0 {
		return out, "", nil
	}
	secret := webhook.NewSecret()
	if out.NotifyWebhookSecretEnc, err = s.sealKeyring(webhook.Keyring{Current: secret}); err != nil {
		return out, "", err
	}
	return out, secret.String(), nil
}

// checkEmails checks a pool's email addresses: bare addresses, at most
// MaxPoolEmails, no repeats.
func checkEmails(in []string) ([]string, error) {
	if len(in) > MaxPoolEmails {
		return nil, apperr.Invalidf("notify_emails holds %d addresses, more than %d", len(in), MaxPoolEmails)
	}
	out := make([]string, 0, len(in))
	for _, raw := range in {
		a, err := mail.ParseAddress(strings.TrimSpace(raw))
		if err != nil || a.Name != "" || strings.ContainsAny(a.Address, ",\r\n") {
			return nil, apperr.Invalidf("notify_emails: %q is not a bare email address", raw)
		}
		for _, seen := range out {
			if strings.EqualFold(seen, a.Address) {
				return nil, apperr.Invalidf("notify_emails: %q is listed twice", raw)
			}
		}
		out = append(out, a.Address)
	}
	return out, nil
}

// savePoolSettings writes settings onto pool id.
func savePoolSettings(tx *gorm.DB, id string, st models.ReviewPoolSettings) error {
	err := tx.Model(&models.ReviewPool{}).Where("id = ?", id).Updates(map[string]any{
		"wait_threshold_seconds": st.WaitThresholdSeconds, "escalate_after_seconds": st.EscalateAfterSeconds,
		"escalate_to_pool_id": st.EscalateToPoolID, "notify_webhook_url": st.NotifyWebhookURL,
		"notify_webhook_secret_enc": st.NotifyWebhookSecretEnc, "notify_emails": st.NotifyEmails,
	}).Error
	if err != nil {
		return fmt.Errorf("admin: save review pool settings: %w", err)
	}
	return nil
}

// RotatePoolWebhookSecret gives pool id's notification webhook a fresh
// signing secret, returned in the view this once; the old one stops signing
// at once.
func (s *Service) RotatePoolWebhookSecret(ctx context.Context, workspaceID, actor, id string) (ReviewPoolView, error) {
	return s.changePool(ctx, workspaceID, actor, id, "review_pool.rotate_webhook_secret", func(tx *gorm.DB, p models.ReviewPool) (string, error) {
		if p.NotifyWebhookURL == "" {
			return "", apperr.Invalidf("review pool %s has no notify_webhook_url to sign for", id)
		}
		secret := webhook.NewSecret()
		sealed, err := s.sealKeyring(webhook.Keyring{Current: secret})
		if err != nil {
			return "", err
		}
		if err := tx.Model(&models.ReviewPool{}).Where("id = ?", p.ID).Update("notify_webhook_secret_enc", sealed).Error; err != nil {
			return "", fmt.Errorf("admin: rotate review pool webhook secret: %w", err)
		}
		return secret.String(), nil
	})
}

// changePool runs fn on pool id of the workspace in an audited transaction
// and returns the pool after it, with the secret fn returned.
func (s *Service) changePool(ctx context.Context, workspaceID, actor, id, action string, fn func(tx *gorm.DB, p models.ReviewPool) (string, error)) (ReviewPoolView, error) {
	e := audit.Entry{WorkspaceID: workspaceID, Actor: actor, Action: action, TargetType: "review_pool", TargetID: id}
	var v ReviewPoolView
	err := s.change(ctx, &e, func(tx *gorm.DB) error {
		var p models.ReviewPool
		if err := take(ctx, tx, &p, workspaceID, id, "review pool"); err != nil {
			return err
		}
		secret, err := fn(tx, p)
		if err != nil {
			return err
		}
		v, err = s.reviewPoolView(ctx, tx, workspaceID, id)
		v.NotifyWebhookSecret = secret
		return err
	})
	return v, err
}
