package admin_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"
	"gorm.io/gorm"

	"github.com/appruntime/appruntime/internal/admin"
	"github.com/appruntime/appruntime/internal/apperr"
	"github.com/appruntime/appruntime/internal/crypt"
	"github.com/appruntime/appruntime/internal/datasource"
	"github.com/appruntime/appruntime/internal/testkit"
	"github.com/appruntime/appruntime/models"
)

// newCheckedService is an admin service whose postgres integrations are
// checked at save as a platform process checks them: through the data
// sources' guard on the tests' platform server, with loopback allowed.
func newCheckedService(t *testing.T) (*admin.Service, *gorm.DB, *crypt.Box, testkit.Tenant) {
	t.Helper()
	st := testkit.Tx(t)
	box, err := crypt.New(testkit.TestKey)
	require.NoError(t, err)
	platform, err := datasource.IdentifyPlatform(context.Background(), st, testkit.DatabaseURL())
	require.NoError(t, err)
	reg := datasource.NewRegistry(box, datasource.Options{Allow: testkit.Loopback, Platform: platform})
	t.Cleanup(reg.Close)
	s := admin.NewService(admin.Options{Store: st, Secrets: box, CheckPostgresFunc: reg.CheckPostgres})
	return s, st.DB, box, testkit.NewTenant(t, st.DB)
}

// requireDSN asserts the DSN integration id holds.
func requireDSN(t *testing.T, db *gorm.DB, box *crypt.Box, id, want string) {
	t.Helper()
	var i models.Integration
	require.NoError(t, db.First(&i, "id = ?", id).Error)
	var secrets datasource.Secrets
	require.NoError(t, box.OpenJSON(i.SecretsEnc, &secrets))
	require.Equal(t, want, secrets.DSN, "nothing written")
}

func dsnSecret(t *testing.T, dsn string) map[string]json.RawMessage {
	t.Helper()
	raw, err := json.Marshal(dsn)
	require.NoError(t, err)
	return map[string]json.RawMessage{"dsn": raw}
}

// TestIntegrationOnThePlatformServerIsRefusedAtSave: a postgres integration
// whose DSN reaches the platform's Postgres server, whatever database it
// names, is a 400 at create and at update, and nothing is written; a
// server of its own and one that cannot be reached now are saved. Before,
// postgres://postgres@127.0.0.1:5432/postgres was saved (201).
func TestIntegrationOnThePlatformServerIsRefusedAtSave(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, db, box, tn := newCheckedService(t)
	u, err := url.Parse(testkit.DatabaseURL())
	require.NoError(t, err)
	u.Path = "/postgres"
	platformServer := u.String()
	const refusal = "secrets.dsn: the DSN reaches the platform's own Postgres server"

	_, err = s.CreateIntegration(ctx, tn.Workspace.ID, "test", admin.IntegrationInput{
		Name: "platform", Kind: admin.KindPostgres, Secrets: dsnSecret(t, platformServer)})
	require.Equal(t, apperr.Invalid, apperr.CodeOf(err), "%v", err)
	_, status, msg := apperr.Public(err)
	require.Equal(t, 400, status)
	require.Contains(t, msg, refusal)

	ownDSN := testkit.DataSourceURL(t)
	own, err := s.CreateIntegration(ctx, tn.Workspace.ID, "test", admin.IntegrationInput{
		Name: "own", Kind: admin.KindPostgres, Secrets: dsnSecret(t, ownDSN)})
	require.NoError(t, err)
	_, err = s.CreateIntegration(ctx, tn.Workspace.ID, "test", admin.IntegrationInput{
		Name: "down", Kind: admin.KindPostgres, Secrets: dsnSecret(t, "postgres://u:p@127.0.0.1:1/db")})
	require.NoError(t, err, "a server that cannot be reached now is saved; every connection is checked again")

	patch, err := json.Marshal(map[string]any{"secrets": map[string]string{"dsn": platformServer}})
	require.NoError(t, err)
	_, err = s.UpdateIntegration(ctx, tn.Workspace.ID, "test", own.ID, patch)
	require.Equal(t, apperr.Invalid, apperr.CodeOf(err), "%v", err)
	require.ErrorContains(t, err, refusal)
	requireDSN(t, db, box, own.ID, ownDSN)
	var n int64
	require.NoError(t, db.Model(&models.Integration{}).Where("workspace_id = ? AND name = ?", tn.Workspace.ID, "platform").Count(&n).Error)
	require.Zero(t, n, "the refused create wrote nothing")
}

// TestIntegrationWithAPrivilegedRoleIsRefusedAtSave: a postgres integration
// whose role is a superuser is a 400 naming the privilege, and nothing is
// written. Before, it was saved (201).
func TestIntegrationWithAPrivilegedRoleIsRefusedAtSave(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, db, _, tn := newCheckedService(t)
	conn, err := pgx.Connect(ctx, testkit.DataSourceAdminURL())
	require.NoError(t, err)
	t.Cleanup(func() { conn.Close(context.Background()) })
	role := fmt.Sprintf("admin_priv_%d", time.Now().UnixNano())
	_, err = conn.Exec(ctx, "CREATE ROLE "+role+" LOGIN SUPERUSER")
	require.NoError(t, err)
	t.Cleanup(func() { _, _ = conn.Exec(context.Background(), "DROP ROLE IF EXISTS "+role) })
	u, err := url.Parse(testkit.DataSourceDatabaseURL())
	require.NoError(t, err)
	u.User = url.User(role)

	_, err = s.CreateIntegration(ctx, tn.Workspace.ID, "test", admin.IntegrationInput{
		Name: "root", Kind: admin.KindPostgres, Secrets: dsnSecret(t, u.String())})
	_, status, msg := apperr.Public(err)
	require.Equal(t, 400, status, "%v", err)
	require.Contains(t, msg, fmt.Sprintf("secrets.dsn: the role %q is a superuser", role))
	var n int64
	require.NoError(t, db.Model(&models.Integration{}).Where("workspace_id = ?", tn.Workspace.ID).Count(&n).Error)
	require.Zero(t, n)
}
