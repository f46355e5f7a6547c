package auth_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/appruntime/appruntime/internal/apperr"
	"github.com/appruntime/appruntime/internal/auth"
	"github.com/appruntime/appruntime/internal/testkit"
	"github.com/appruntime/appruntime/models"
)

// TestAUseStampsLastUsedAtMostOnceAMinute: last_used_at says when a token
// was last used, to the minute, without a write on every request.
func TestAUseStampsLastUsedAtMostOnceAMinute(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	for _, tc := range []struct {
		name    string
		before  *time.Duration // last_used_at this long ago; nil: never used
		stamped bool
	}{
		{"never used", nil, true},
		{"used 30 s ago", ptr(30 * time.Second), false},
		{"used 45 s ago", ptr(45 * time.Second), false},
		{"used a minute ago", ptr(time.Minute), true},
		{"used yesterday", ptr(24 * time.Hour), true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			st := testkit.Tx(t)
			tn := testkit.NewTenant(t, st.DB)
			var tok models.APIToken
			require.NoError(t, st.DB.Where("token_hash = ?", auth.HashToken(tn.AgentToken)).Take(&tok).Error)
			var was *time.Time
			if tc.before != nil {
				at := time.Now().UTC().Add(-*tc.before).Truncate(time.Microsecond)
				was = &at
				require.NoError(t, st.DB.Model(&tok).Update("last_used_at", at).Error)
			}
			start := time.Now().UTC().Truncate(time.Microsecond)
			p, err := auth.Verify(ctx, st.DB, tn.AgentToken, models.ScopeAgent)
			require.NoError(t, err)
			require.Equal(t, tok.ID, p.TokenID)
			require.NoError(t, st.DB.Take(&tok, "id = ?", tok.ID).Error)
			require.NotNil(t, tok.LastUsedAt)
			if !tc.stamped {
				require.True(t, was.Equal(*tok.LastUsedAt), "left alone: %s, was %s", tok.LastUsedAt, was)
				return
			}
			require.False(t, tok.LastUsedAt.Before(start), "stamped with this use: %s < %s", tok.LastUsedAt, start)
			stamp := *tok.LastUsedAt
			_, err = auth.Verify(ctx, st.DB, tn.AgentToken, models.ScopeAgent)
			require.NoError(t, err)
			require.NoError(t, st.DB.Take(&tok, "id = ?", tok.ID).Error)
			require.True(t, stamp.Equal(*tok.LastUsedAt), "a second use within the minute writes nothing")
		})
	}
}

// TestARefusedTokenIsNotStamped: only a use that authenticates counts.
func TestARefusedTokenIsNotStamped(t *testing.T) {
	t.Parallel()
	st := testkit.Tx(t)
	tn := testkit.NewTenant(t, st.DB)
	_, err := auth.Verify(context.Background(), st.DB, tn.AgentToken, models.ScopeAdmin)
	require.Error(t, err, "an agent token is not an admin token")
	var tok models.APIToken
	require.NoError(t, st.DB.Where("token_hash = ?", auth.HashToken(tn.AgentToken)).Take(&tok).Error)
	require.Nil(t, tok.LastUsedAt)
}

func ptr[T any](v T) *T { return &v }

// TestCheckPasswordAcrossWorkspaces: an email may be a user of several
// workspaces; the password says which.
func TestCheckPasswordAcrossWorkspaces(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st := testkit.Tx(t)
	email := "person-" + models.NewID()[:8] + "@example.test"
	user := func(role, password string, age time.Duration) models.User {
		tn := testkit.NewTenant(t, st.DB)
		hash, err := auth.HashPassword(password)
		require.NoError(t, err)
		at := time.Now().UTC().Add(-age)
		u := models.User{ID: models.NewID(), WorkspaceID: tn.Workspace.ID, Email: email, Role: role, PasswordHash: hash, CreatedAt: at, UpdatedAt: at}
		require.NoError(t, st.DB.Create(&u).Error)
		return u
	}
	reviewer := user(models.RoleReviewer, "shared password", 3*time.Hour)
	older := user(models.RoleAdmin, "shared password", 2*time.Hour)
	user(models.RoleAdmin, "shared password", time.Hour)
	own := user(models.RoleReviewer, "my own password", 0)
	for _, tc := range []struct {
		name, email, password string
		want                  string // user id; "" for a refusal
	}{
		{"a password only one account has", email, "my own password", own.ID},
		{"a password several have: the oldest admin", strings.ToUpper(email), "shared password", older.ID},
		{"a wrong password", email, "nobody's password", ""},
		{"an unknown email", "nobody@example.test", "shared password", ""},
	} {
		u, err := auth.CheckPassword(ctx, st.DB, tc.email, tc.password)
		if tc.want == "" {
			require.True(t, apperr.Is(err, apperr.Unauthenticated), "%s: %v", tc.name, err)
			continue
		}
		require.NoError(t, err, tc.name)
		require.Equal(t, tc.want, u.ID, tc.name)
	}
	require.NotEqual(t, reviewer.ID, older.ID)
}
