package session

import (
	"context"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"github.com/stretchr/testify/require"

	"github.com/appruntime/appruntime/internal/apperr"
	"github.com/appruntime/appruntime/internal/store"
	"github.com/appruntime/appruntime/internal/testkit"
	"github.com/appruntime/appruntime/models"
)

// TestPreviewSessions mints preview sessions on Postgres and on the dev
// mode's SQLite: the claims say preview and name the binding and no task;
// the row is on no task; the workspace's live previews stop at
// MaxLivePreviewsPerWorkspace (429 with Retry-After) without touching
// another workspace's or the task sessions; revoking the admin's sessions
// ends them; a token mixing the kinds is refused.
func TestPreviewSessions(t *testing.T) {
	t.Parallel()
	for name, open := range map[string]func(testing.TB) *store.Store{"postgres": testkit.Tx, "sqlite": testkit.SQLite} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			e := newEnvOn(t, open(t))
			iss := e.issuer(t, newKey)
			bindingOf := func(ws string) string {
				b := models.Binding{ID: models.NewID(), WorkspaceID: ws, Name: "b-" + models.NewID()[:8], BindingKind: "postgres",
					AllowedOperations: models.JSON(`{}`), Version: 1, CreatedAt: time.Now(), UpdatedAt: time.Now()}
				require.NoError(t, e.st.DB.Create(&b).Error)
				return b.ID
			}
			in := PreviewInput{WorkspaceID: e.tenant.Workspace.ID, BindingID: bindingOf(e.tenant.Workspace.ID), UserID: e.tenant.Admin.ID}

			tok, c, err := iss.MintPreview(ctx, in)
			require.NoError(t, err)
			got, err := iss.Verify(ctx, tok)
			require.NoError(t, err)
			require.Equal(t, c, got)
			require.True(t, got.Preview())
			require.Equal(t, in.BindingID, got.BindingID)
			require.Empty(t, got.TaskID+got.StepID+got.AgentID+got.ConfiguredToolID)
			require.Equal(t, "preview:"+got.SessionID, got.Surface(), "a preview is its own rate-limit surface")
			require.LessOrEqual(t, time.Until(got.ExpiresAt), PreviewTTL)
			var row models.AppSession
			require.NoError(t, e.st.DB.Where("id = ?", c.SessionID).Take(&row).Error)
			require.Equal(t, models.SessionPreview, row.Kind)
			require.Empty(t, row.TaskID)
			require.Equal(t, in.BindingID, *row.BindingID)

			// A task's session is still a task's.
			taskTok, _, err := iss.Mint(ctx, e.input)
			require.NoError(t, err)
			taskClaims, err := iss.Verify(ctx, taskTok)
			require.NoError(t, err)
			require.False(t, taskClaims.Preview())
			require.Equal(t, KindTask, taskClaims.Kind)
			require.Equal(t, e.step.ID, taskClaims.Surface())

			// The workspace's limit.
			for range MaxLivePreviewsPerWorkspace - 1 {
				_, _, err := iss.MintPreview(ctx, in)
				require.NoError(t, err)
			}
			_, _, err = iss.MintPreview(ctx, in)
			require.Equal(t, apperr.RateLimited, apperr.CodeOf(err), "%v", err)
			require.Positive(t, apperr.RetryAfterSeconds(err))
			require.Contains(t, err.Error(), "10 live preview sessions")
			other := testkit.NewTenant(t, e.st.DB)
			_, _, err = iss.MintPreview(ctx, PreviewInput{WorkspaceID: other.Workspace.ID, BindingID: bindingOf(other.Workspace.ID), UserID: other.Admin.ID})
			require.NoError(t, err, "another workspace is not starved")

			// Revoking the admin's sessions ends the previews too.
			require.NoError(t, iss.RevokeUserSessions(ctx, e.st.DB, e.tenant.Admin.ID))
			_, err = iss.Verify(ctx, tok)
			requireRefused(t, err, "session token revoked")
			_, _, err = iss.MintPreview(ctx, in)
			require.NoError(t, err, "revoked previews no longer count")

			// Bad input, and tokens mixing the kinds.
			_, _, err = iss.MintPreview(ctx, PreviewInput{WorkspaceID: in.WorkspaceID, BindingID: in.BindingID})
			require.Equal(t, apperr.Invalid, apperr.CodeOf(err))
			_, _, err = iss.MintPreview(ctx, PreviewInput{WorkspaceID: in.WorkspaceID, BindingID: "x", UserID: in.UserID})
			require.Equal(t, apperr.Invalid, apperr.CodeOf(err))
			hs256 := func(c jwt.Claims) string { return sign(t, jwt.SigningMethodHS256, newKey.Secret, newKey.ID, c) }
			preview := func(f func(*tokenClaims)) string {
				now := time.Now()
				c := tokenClaims{RegisteredClaims: jwt.RegisteredClaims{ID: models.NewID(), Issuer: testIssuer, Audience: jwt.ClaimStrings{Audience},
					IssuedAt: jwt.NewNumericDate(now), NotBefore: jwt.NewNumericDate(now), ExpiresAt: jwt.NewNumericDate(now.Add(PreviewTTL))},
					WorkspaceID: in.WorkspaceID, BindingID: in.BindingID, UserID: in.UserID, Kind: KindPreview}
				f(&c)
				return hs256(c)
			}
			_, err = iss.Verify(ctx, preview(func(*tokenClaims) {}))
			require.NoError(t, err, "the spoiling below starts from a valid token")
			for what, tok := range map[string]string{
				"a preview naming a task":   preview(func(c *tokenClaims) { c.TaskID = e.task.ID }),
				"a preview naming a step":   preview(func(c *tokenClaims) { c.StepID = e.step.ID }),
				"a preview with no binding": preview(func(c *tokenClaims) { c.BindingID = "" }),
				"an unknown kind":           preview(func(c *tokenClaims) { c.Kind = "admin" }),
			} {
				_, err := iss.Verify(ctx, tok)
				require.Error(t, err, what)
				requireRefused(t, err, "session token claims incomplete")
			}
			_, err = iss.Verify(ctx, preview(func(c *tokenClaims) { c.ExpiresAt = jwt.NewNumericDate(time.Now().Add(PreviewTTL + time.Minute)) }))
			requireRefused(t, err, "session token lifetime too long")
		})
	}
}
