package admin_test

import (
	"context"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"gorm.io/gorm"

	"github.com/appruntime/appruntime/internal/admin"
	"github.com/appruntime/appruntime/internal/apperr"
	"github.com/appruntime/appruntime/internal/auth"
	"github.com/appruntime/appruntime/internal/crypt"
	"github.com/appruntime/appruntime/internal/testkit"
	"github.com/appruntime/appruntime/internal/webhook"
	"github.com/appruntime/appruntime/models"
)

func newService(t *testing.T) (*admin.Service, *gorm.DB, testkit.Tenant, *crypt.Box) {
	t.Helper()
	st := testkit.Tx(t)
	box, err := crypt.New(testkit.TestKey)
	require.NoError(t, err)
	return admin.NewService(admin.Options{Store: st, Secrets: box}), st.DB, testkit.NewTenant(t, st.DB), box
}

func TestStoreTokenKeepsTheChosenSecretAndRefusesBadOnes(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, db, tn, _ := newService(t)

	secret := auth.NewTokenSecret(models.ScopeAgent)
	v, err := s.StoreToken(ctx, tn.Workspace.ID, "system", admin.TokenInput{Scope: models.ScopeAgent, Name: "fixed", AgentID: &tn.Agent.ID}, secret)
	require.NoError(t, err)
	p, err := auth.Verify(ctx, db, secret, models.ScopeAgent)
	require.NoError(t, err, "the chosen secret works as a token")
	require.Equal(t, v.ID, p.TokenID)
	require.Equal(t, tn.Agent.ID, p.AgentID)
	var n int64
	require.NoError(t, db.Model(&models.AuditEntry{}).Where("action = ? AND target_id = ?", "token.store", v.ID).Count(&n).Error)
	require.EqualValues(t, 1, n, "audited")

	otherAgent := models.NewID()
	for _, tc := range []struct {
		name   string
		in     admin.TokenInput
		secret string
		code   apperr.Code
		msg    string
	}{
		{"stored twice", admin.TokenInput{Scope: models.ScopeAgent, AgentID: &tn.Agent.ID}, secret, apperr.Conflict, "already stored"},
		{"another scope's form", admin.TokenInput{Scope: models.ScopeAdmin}, auth.NewTokenSecret(models.ScopeHost), apperr.Invalid, "must start with art_admin_"},
		{"too short", admin.TokenInput{Scope: models.ScopeAdmin}, "art_admin_short", apperr.Invalid, "at least 43 more characters"},
		{"owner of another workspace", admin.TokenInput{Scope: models.ScopeAgent, AgentID: &otherAgent}, auth.NewTokenSecret(models.ScopeAgent), apperr.Invalid, "is not an agent of this workspace"},
		{"unknown scope", admin.TokenInput{Scope: "root"}, "art_root_" + strings.Repeat("x", 43), apperr.Invalid, "must be host, agent or admin"},
	} {
		_, err := s.StoreToken(ctx, tn.Workspace.ID, "system", tc.in, tc.secret)
		require.Error(t, err, tc.name)
		require.Equal(t, tc.code, apperr.CodeOf(err), "%s: %v", tc.name, err)
		require.Contains(t, err.Error(), tc.msg, tc.name)
	}
}

func TestSetWebhookSecretSealsTheChosenSecret(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, db, tn, box := newService(t)

	secret := strings.Repeat("s", admin.MinChosenWebhookSecretLength)
	v, err := s.SetWebhookSecret(ctx, tn.Workspace.ID, "system", tn.Agent.ID, secret)
	require.NoError(t, err)
	require.True(t, v.WebhookSecretSet)
	var a models.Agent
	require.NoError(t, db.Where("id = ?", tn.Agent.ID).Take(&a).Error)
	opened, err := box.Open(a.WebhookSecretEnc)
	require.NoError(t, err)
	keys, err := webhook.ParseStoredKeyring(opened)
	require.NoError(t, err)
	legacy, err := webhook.FromLegacy([]byte(secret))
	require.NoError(t, err)
	require.True(t, keys.Current.Equal(legacy), "a chosen string is a legacy secret: its bytes are the key")
	require.Equal(t, legacy.String(), v.WebhookSecret)
	require.True(t, keys.Previous.IsZero(), "a chosen secret replaces, with no overlap")

	written := webhook.NewSecret().String()
	v, err = s.SetWebhookSecret(ctx, tn.Workspace.ID, "system", tn.Agent.ID, written)
	require.NoError(t, err)
	require.Equal(t, written, v.WebhookSecret, "a secret in the written form is read as one")

	_, err = s.SetWebhookSecret(ctx, tn.Workspace.ID, "system", tn.Agent.ID, "short")
	require.Equal(t, apperr.Invalid, apperr.CodeOf(err))
	_, err = s.SetWebhookSecret(ctx, tn.Workspace.ID, "system", models.NewID(), secret)
	require.Equal(t, apperr.NotFound, apperr.CodeOf(err))
}
