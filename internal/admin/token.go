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
	"github.com/appruntime/appruntime/models"
)

// TokenInput is a token to issue: a host token names a user, an agent token
// an agent (both of the workspace); an admin token names neither.
type TokenInput struct {
	Scope   string  `json:"scope"`
	Name    string  `json:"name,omitempty"`
	UserID  *string `json:"user_id,omitempty"`
	AgentID *string `json:"agent_id,omitempty"`
}

// TokenView is a token as the admin API shows it: never its secret.
type TokenView struct {
	ID         string     `json:"id"`
	Scope      string     `json:"scope"`
	Name       string     `json:"name"`
	UserID     *string    `json:"user_id"`
	AgentID    *string    `json:"agent_id"`
	CreatedAt  time.Time  `json:"created_at"`
	LastUsedAt *time.Time `json:"last_used_at"`
	RevokedAt  *time.Time `json:"revoked_at"`
}

// NewToken is the reply to issuing a token: the secret, shown this once.
type NewToken struct {
	TokenView
	Token string `json:"token"`
}

func tokenView(t models.APIToken) TokenView {
	return TokenView{ID: t.ID, Scope: t.Scope, Name: t.Name, UserID: t.UserID, AgentID: t.AgentID,
		CreatedAt: t.CreatedAt, LastUsedAt: t.LastUsedAt, RevokedAt: t.RevokedAt}
}

// ListTokens returns the workspace's tokens, newest first, revoked ones included.
func (s *Service) ListTokens(ctx context.Context, workspaceID string) ([]TokenView, error) {
	var rows []models.APIToken
	if err := s.st.DB.WithContext(ctx).Where("workspace_id = ?", workspaceID).Order("created_at DESC, id").Find(&rows).Error; err != nil {
		return nil, fmt.Errorf("admin: list tokens: %w", err)
	}
	out := make([]TokenView, 0, len(rows))
	for _, t := range rows {
		out = append(out, tokenView(t))
	}
	return out, nil
}

// GetToken returns a token of the workspace.
func (s *Service) GetToken(ctx context.Context, workspaceID, id string) (TokenView, error) {
	var t models.APIToken
	if err := take(ctx, s.st.DB, &t, workspaceID, id, "token"); err != nil {
		return TokenView{}, err
	}
	return tokenView(t), nil
}

// IssueToken issues a token of the workspace and returns its secret once.
func (s *Service) IssueToken(ctx context.Context, workspaceID, actor string, in TokenInput) (NewToken, error) {
	name, err := field.OptionalName(in.Name, "name", MaxNameLength)
	if err != nil {
		return NewToken{}, err
	}
	var out NewToken
	e := audit.Entry{WorkspaceID: workspaceID, Actor: actor, Action: "token.issue", TargetType: "token"}
	err = s.change(ctx, &e, func(tx *gorm.DB) error {
		if err := checkTokenOwner(ctx, tx, workspaceID, in); err != nil {
			return err
		}
		tok, secret, err := auth.IssueToken(ctx, tx, workspaceID, in.Scope, name, in.UserID, in.AgentID)
		if err != nil {
			return err
		}
		out = NewToken{TokenView: tokenView(tok), Token: secret}
		e.TargetID = tok.ID
		e.Detail = map[string]any{"scope": tok.Scope, "name": tok.Name, "user_id": tok.UserID, "agent_id": tok.AgentID}
		return nil
	})
	if err != nil {
		return NewToken{}, err
	}
	return out, nil
}

// checkTokenOwner checks that a token names exactly the owner its scope needs,
// in the workspace.
func checkTokenOwner(ctx context.Context, tx *gorm.DB, workspaceID string, in TokenInput) error {
	switch in.Scope {
	case models.ScopeHost:
		if in.AgentID != nil {
			return apperr.Invalidf("agent_id is only for agent tokens")
		}
		if in.UserID == nil || *in.UserID == "" {
			return apperr.Invalidf("user_id is required for a host token")
		}
		if err := take(ctx, tx, &models.User{}, workspaceID, *in.UserID, "user"); err != nil {
			if apperr.Is(err, apperr.NotFound) {
				return apperr.Invalidf("user_id %s is not a user of this workspace", *in.UserID)
			}
			return err
		}
	case models.ScopeAgent:
		if in.UserID != nil {
			return apperr.Invalidf("user_id is only for host tokens")
		}
		if in.AgentID == nil || *in.AgentID == "" {
			return apperr.Invalidf("agent_id is required for an agent token")
		}
		if err := take(ctx, tx, &models.Agent{}, workspaceID, *in.AgentID, "agent"); err != nil {
			if apperr.Is(err, apperr.NotFound) {
				return apperr.Invalidf("agent_id %s is not an agent of this workspace", *in.AgentID)
			}
			return err
		}
	case models.ScopeAdmin:
		if in.UserID != nil || in.AgentID != nil {
			return apperr.Invalidf("an admin token takes neither user_id nor agent_id")
		}
	case "":
		return apperr.Invalidf("scope is required: host, agent or admin")
	default:
		return apperr.Invalidf("scope %q must be host, agent or admin", in.Scope)
	}
	return nil
}

// RevokeToken revokes a token of the workspace; it stops working at once,
// and so do the app sessions a host token minted.
func (s *Service) RevokeToken(ctx context.Context, workspaceID, actor, id string) error {
	e := audit.Entry{WorkspaceID: workspaceID, Actor: actor, Action: "token.revoke", TargetType: "token", TargetID: id}
	return s.change(ctx, &e, func(tx *gorm.DB) error {
		if !models.IsID(id) {
			return apperr.NotFoundf("token not found")
		}
		if err := auth.RevokeToken(ctx, tx, workspaceID, id); err != nil {
			return err
		}
		if err := s.revokeCachedTokens(ctx, id); err != nil {
			return err
		}
		return s.sessions.RevokeTokenSessions(ctx, tx, id)
	})
}

// revokeCachedTokens makes every replica refuse tokens ids before the
// transaction that revokes or deletes them commits (auth.TokenCache).
func (s *Service) revokeCachedTokens(ctx context.Context, ids ...string) error {
	if s.tokens == nil {
		return nil
	}
	return s.tokens.Revoke(ctx, ids...)
}

// revokeCachedTokensOf does revokeCachedTokens for the tokens whose column
// (user_id, agent_id) is id: those a deletion in tx cascades to.
func (s *Service) revokeCachedTokensOf(ctx context.Context, tx *gorm.DB, column, id string) error {
	if s.tokens == nil {
		return nil
	}
	var ids []string
	if err := tx.Model(&models.APIToken{}).Where(column+" = ?", id).Pluck("id", &ids).Error; err != nil {
		return fmt.Errorf("admin: list tokens to revoke: %w", err)
	}
	return s.revokeCachedTokens(ctx, ids...)
}
