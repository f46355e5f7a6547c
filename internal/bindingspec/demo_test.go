package bindingspec_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/appruntime/appruntime/internal/binding"
	"github.com/appruntime/appruntime/internal/bindingspec"
	"github.com/appruntime/appruntime/internal/demo"
	"github.com/appruntime/appruntime/internal/testkit"
	"github.com/appruntime/appruntime/models"
)

// TestDemoBindingIsValid keeps the dev mode's seeded binding within the
// rules a save enforces, over its dev-only sqlite data source.
func TestDemoBindingIsValid(t *testing.T) {
	t.Parallel()
	st := testkit.Tx(t)
	tn := testkit.NewTenant(t, st.DB)
	in := models.Integration{ID: models.NewID(), WorkspaceID: tn.Workspace.ID, Name: demo.IntegrationName, Kind: bindingspec.IntegrationSQLite}
	require.NoError(t, st.DB.Create(&in).Error)
	raw, err := json.Marshal(demo.Spec())
	require.NoError(t, err)
	spec, err := bindingspec.Validate(context.Background(), binding.WorkspaceOf(st.DB, tn.Workspace.ID), bindingspec.Input{
		Name: demo.BindingName, BindingKind: bindingspec.KindPostgres, IntegrationID: in.ID, AllowedOperations: raw,
	})
	require.NoError(t, err)
	require.Len(t, spec.Writes, 2)

	// The same document over another workspace's data source is refused.
	other := testkit.NewTenant(t, st.DB)
	_, err = bindingspec.Validate(context.Background(), binding.WorkspaceOf(st.DB, other.Workspace.ID), bindingspec.Input{
		Name: demo.BindingName, BindingKind: bindingspec.KindPostgres, IntegrationID: in.ID, AllowedOperations: raw,
	})
	require.EqualError(t, err, `invalid: integration_id "`+in.ID+`" is not an integration of this workspace`)
}
