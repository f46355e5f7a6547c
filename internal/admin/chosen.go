package admin

import (
	"context"

	"gorm.io/gorm"

	"github.com/appruntime/appruntime/internal/apperr"
	"github.com/appruntime/appruntime/internal/audit"
	"github.com/appruntime/appruntime/internal/auth"
	"github.com/appruntime/appruntime/internal/field"
	"github.com/appruntime/appruntime/internal/store"
	"github.com/appruntime/appruntime/internal/webhook"
)

// MinChosenWebhookSecretLength is how long a caller-chosen webhook secret is
// at least: as long as 32 random bytes in base64.
const MinChosenWebhookSecretLength = 43

// StoreToken stores a token of the workspace whose secret the caller chose,
// with the owner checks and the audit entry of IssueToken. The dev seed uses
// it so that the demo's tokens, kept in .appruntime/secrets.json, survive a
// restart; the admin API never takes a secret. A secret already stored is a 409.
func (s *Service) StoreToken(ctx context.Context, workspaceID, actor string, in TokenInput, secret string) (TokenView, error) {
	name, err := field.OptionalName(in.Name, "name", MaxNameLength)
	if err != nil {
		return TokenView{}, err
	}
	var out TokenView
	e := audit.Entry{WorkspaceID: workspaceID, Actor: actor, Action: "token.store", TargetType: "token"}
	err = s.change(ctx, &e, func(tx *gorm.DB) error {
		if err := checkTokenOwner(ctx, tx, workspaceID, in); err != nil {
			return err
		}
		if err := auth.CheckTokenSecret(secret, in.Scope); err != nil {
			return err
		}
		tok, err := auth.StoreToken(ctx, tx, workspaceID, in.Scope, name, secret, in.UserID, in.AgentID)
		if err != nil {
			if store.IsUniqueViolation(err) {
				return apperr.Conflictf("this %s token secret is already stored", in.Scope)
			}
			return err
		}
		out = tokenView(tok)
		e.TargetID = tok.ID
		e.Detail = map[string]any{"scope": tok.Scope, "name": tok.Name, "user_id": tok.UserID, "agent_id": tok.AgentID}
		return nil
	})
	if err != nil {
		return TokenView{}, err
	}
	return out, nil
}

// SetWebhookSecret makes secret, which the caller chose, an agent's webhook
// signing secret, replacing its keyring with no overlap (audited like a
// rotation). A secret in the written form ("whsec_…") is read as one; any
// other string is a legacy secret whose bytes are the key
// (webhook.FromLegacy). The dev seed uses it so that the demo agent's secret
// survives a restart; the admin API only rotates.
func (s *Service) SetWebhookSecret(ctx context.Context, workspaceID, actor, id, secret string) (AgentView, error) {
	if len(secret) < MinChosenWebhookSecretLength {
		return AgentView{}, apperr.Invalidf("a webhook secret is at least %d characters", MinChosenWebhookSecretLength)
	}
	sec, err := webhook.ParseSecret(secret)
	if err != nil {
		if sec, err = webhook.FromLegacy([]byte(secret)); err != nil {
			return AgentView{}, err
		}
	}
	v, err := s.replaceWebhookSecret(ctx, workspaceID, actor, id, "agent.set_webhook_secret", nil,
		func(webhook.Keyring) (webhook.Keyring, error) { return webhook.Keyring{Current: sec}, nil })
	if err != nil {
		return AgentView{}, err
	}
	v.WebhookSecret = sec.String()
	return v, nil
}
