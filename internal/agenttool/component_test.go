package agenttool_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/appruntime/appruntime/internal/agenttool"
	"github.com/appruntime/appruntime/internal/apperr"
	"github.com/appruntime/appruntime/internal/crypt"
	"github.com/appruntime/appruntime/internal/integration"
	"github.com/appruntime/appruntime/internal/testkit"
	"github.com/appruntime/appruntime/models"
)

// TestIntegrationComponents loads components from the integrations table:
// the env is opened from the sealed secrets; another workspace's
// integration, or one of another kind, is not found.
func TestIntegrationComponents(t *testing.T) {
	t.Parallel()
	st := testkit.Tx(t)
	tn := testkit.NewTenant(t, st.DB)
	other := testkit.NewTenant(t, st.DB)
	box, err := crypt.New(testkit.TestKey)
	require.NoError(t, err)
	sealed, err := box.SealJSON(map[string]any{"env": map[string]string{"API_KEY": "k-1"}, "other": "x"})
	require.NoError(t, err)
	now := time.Now()
	integ := func(ws, kind, base string, secrets []byte) models.Integration {
		i := models.Integration{ID: models.NewID(), WorkspaceID: ws, Name: "api", Kind: kind, BaseURL: base, SecretsEnc: secrets, CreatedAt: now, UpdatedAt: now}
		require.NoError(t, st.DB.Create(&i).Error)
		return i
	}
	comp := integ(tn.Workspace.ID, agenttool.IntegrationKindComponent, "https://api.example.test/v1/", sealed)
	bare := integ(tn.Workspace.ID, agenttool.IntegrationKindComponent, "https://bare.example.test", nil)
	rest := integ(tn.Workspace.ID, "rest", "https://rest.example.test", nil)
	foreign := integ(other.Workspace.ID, agenttool.IntegrationKindComponent, "https://x.example.test", nil)
	badURL := integ(tn.Workspace.ID, agenttool.IntegrationKindComponent, "https://x.example.test/?q=1", nil)

	lookup, err := integration.New(integration.Options{DB: st.DB})
	require.NoError(t, err)
	src := agenttool.IntegrationComponents{Integrations: lookup, Box: box}
	ctx := context.Background()
	got, err := src.Component(ctx, tn.Workspace.ID, comp.ID)
	require.NoError(t, err)
	require.Equal(t, agenttool.Component{ID: comp.ID, WorkspaceID: tn.Workspace.ID, Name: "api",
		BaseURL: "https://api.example.test/v1", Env: map[string]string{"API_KEY": "k-1"}}, got)
	got, err = src.Component(ctx, tn.Workspace.ID, bare.ID)
	require.NoError(t, err)
	require.Empty(t, got.Env)

	for _, id := range []string{rest.ID, foreign.ID, models.NewID(), "not-a-uuid"} {
		_, err = src.Component(ctx, tn.Workspace.ID, id)
		require.Equal(t, apperr.NotFound, apperr.CodeOf(err), "id %s: %v", id, err)
	}
	_, err = src.Component(ctx, tn.Workspace.ID, badURL.ID)
	require.Equal(t, apperr.Invalid, apperr.CodeOf(err))

	// A declaration saved against the table sees the component's env names.
	_, err = agenttool.ParseDeclaration(ctx, declaration(`{"type":"app","component":"`+comp.ID+`","path":"/t","method":"POST","headers":{"X-Key":"${env.API_KEY}"}}`),
		agenttool.CheckOptions{WorkspaceID: tn.Workspace.ID, Components: src})
	require.NoError(t, err)
	_, err = agenttool.ParseDeclaration(ctx, declaration(`{"type":"app","component":"`+rest.ID+`","path":"/t","method":"POST"}`),
		agenttool.CheckOptions{WorkspaceID: tn.Workspace.ID, Components: src})
	require.Equal(t, apperr.Invalid, apperr.CodeOf(err), "a rest integration is not a component")
}
