package admin_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/appruntime/appruntime/internal/admin"
	"github.com/appruntime/appruntime/internal/store"
	"github.com/appruntime/appruntime/internal/testkit"
	"github.com/appruntime/appruntime/models"
)

// TestObjectAndActorNames names a workspace's objects and actors on both
// dialects: another workspace's agent, an id that is no UUID and a kind
// without names stay unnamed; a token reads as its name, or as whom it acts
// for when it has none.
func TestObjectAndActorNames(t *testing.T) {
	t.Parallel()
	testkit.EachDialect(t, func(t *testing.T, st *store.Store) {
		ctx := context.Background()
		s := admin.NewService(admin.Options{Store: st})
		tn := testkit.NewTenant(t, st.DB)
		other := testkit.NewTenant(t, st.DB)
		ws := tn.Workspace.ID
		named := models.APIToken{ID: models.NewID(), WorkspaceID: ws, Scope: "admin", Name: "deploy bot", TokenHash: models.NewID()}
		hostOf := models.APIToken{ID: models.NewID(), WorkspaceID: ws, Scope: "host", UserID: &tn.Admin.ID, TokenHash: models.NewID()}
		bare := models.APIToken{ID: models.NewID(), WorkspaceID: ws, Scope: "admin", TokenHash: models.NewID()}
		require.NoError(t, st.DB.Create(&[]models.APIToken{named, hostOf, bare}).Error)

		names, err := s.ObjectNames(ctx, ws, []admin.Object{
			{Kind: "agent", ID: tn.Agent.ID},
			{Kind: "user", ID: tn.Admin.ID},
			{Kind: "token", ID: named.ID},
			{Kind: "token", ID: bare.ID},
			{Kind: "agent", ID: other.Agent.ID},
			{Kind: "binding", ID: "not-a-uuid"},
			{Kind: "queue_task", ID: models.NewID()},
		})
		require.NoError(t, err)
		require.Equal(t, map[admin.Object]string{
			{Kind: "agent", ID: tn.Agent.ID}: tn.Agent.Name,
			{Kind: "user", ID: tn.Admin.ID}:  tn.Admin.Email,
			{Kind: "token", ID: named.ID}:    "deploy bot",
		}, names)

		actors, err := s.ActorNames(ctx, ws)
		require.NoError(t, err)
		require.Equal(t, tn.Admin.Email, actors["user:"+tn.Admin.ID])
		require.Equal(t, "agent "+tn.Agent.Name, actors["agent:"+tn.Agent.ID])
		require.Equal(t, "deploy bot (token)", actors["token:"+named.ID])
		require.Equal(t, tn.Admin.Email+" (host token)", actors["token:"+hostOf.ID])
		require.NotContains(t, actors, "token:"+bare.ID, "an unnamed admin token is shown by its id")
		require.NotContains(t, actors, "agent:"+other.Agent.ID)
	})
}
