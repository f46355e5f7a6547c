package admin_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/appruntime/appruntime/internal/admin"
	"github.com/appruntime/appruntime/internal/apperr"
	"github.com/appruntime/appruntime/internal/store"
	"github.com/appruntime/appruntime/internal/testkit"
	"github.com/appruntime/appruntime/models"
)

// TestTheLastAdminKeepsTheRole: on both dialects (the workspace row is
// locked with FOR UPDATE on Postgres, which SQLite does without), the last
// admin of a workspace is neither demoted nor deleted, and is demoted once
// another admin exists.
func TestTheLastAdminKeepsTheRole(t *testing.T) {
	t.Parallel()
	testkit.EachDialect(t, func(t *testing.T, st *store.Store) {
		ctx := context.Background()
		s := admin.NewService(admin.Options{Store: st})
		tn := testkit.NewTenant(t, st.DB)
		ws := tn.Workspace.ID

		_, err := s.UpdateUser(ctx, ws, "system", tn.Admin.ID, []byte(`{"role":"reviewer"}`))
		require.True(t, apperr.Is(err, apperr.Conflict), "%v", err)
		require.ErrorContains(t, err, "last admin and cannot be made reviewer")
		err = s.DeleteUser(ctx, ws, "system", tn.Admin.ID)
		require.True(t, apperr.Is(err, apperr.Conflict), "%v", err)
		var u models.User
		require.NoError(t, st.DB.Take(&u, "id = ?", tn.Admin.ID).Error)
		require.Equal(t, models.RoleAdmin, u.Role)

		_, err = s.CreateUser(ctx, ws, "system", admin.UserInput{Email: "second@example.test", Role: models.RoleAdmin, Password: "correct horse battery"})
		require.NoError(t, err)
		v, err := s.UpdateUser(ctx, ws, "system", tn.Admin.ID, []byte(`{"role":"reviewer"}`))
		require.NoError(t, err)
		require.Equal(t, models.RoleReviewer, v.Role)
	})
}
