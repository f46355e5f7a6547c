package integration_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/appruntime/appruntime/internal/admin"
	"github.com/appruntime/appruntime/internal/apperr"
	"github.com/appruntime/appruntime/internal/config"
	"github.com/appruntime/appruntime/internal/crypt"
	"github.com/appruntime/appruntime/internal/integration"
	"github.com/appruntime/appruntime/internal/rdb"
	"github.com/appruntime/appruntime/internal/store"
	"github.com/appruntime/appruntime/internal/testkit"
	"github.com/appruntime/appruntime/models"
)

// replica is one process's lookup on the shared database and Redis.
func replica(t *testing.T, st *store.Store, rc redis.UniversalClient, prefix string) *integration.Lookup {
	t.Helper()
	l, err := integration.New(integration.Options{DB: st.DB, Redis: rc, KeyPrefix: prefix})
	require.NoError(t, err)
	t.Cleanup(l.Close)
	return l
}

// eachDeployment runs fn on Postgres with the shared Redis, and on the dev
// mode's SQLite with its in-process Redis.
func eachDeployment(t *testing.T, fn func(t *testing.T, st *store.Store, rc redis.UniversalClient, prefix string)) {
	testkit.EachDialect(t, func(t *testing.T, st *store.Store) {
		if st.Dialect == config.Postgres {
			rd := testkit.Redis(t)
			fn(t, st, rd.Client, rd.Prefix)
			return
		}
		embedded, err := rdb.StartEmbedded()
		require.NoError(t, err)
		t.Cleanup(embedded.Close)
		rc, err := rdb.Open(context.Background(), embedded.URL)
		require.NoError(t, err)
		t.Cleanup(func() { _ = rc.Close() })
		fn(t, st, rc, "dev:")
	})
}

// TestAChangedSecretAppliesOnTheOtherReplicasNextCall: an admin change on
// one replica is answered only once every replica dropped its row, so the
// other replica's very next read (with no wait, and its row young enough
// to be served from cache otherwise) holds the new secret; a delete is
// not_found there at once too.
func TestAChangedSecretAppliesOnTheOtherReplicasNextCall(t *testing.T) {
	t.Parallel()
	eachDeployment(t, func(t *testing.T, st *store.Store, rc redis.UniversalClient, prefix string) {
		ctx := context.Background()
		box, err := crypt.New(testkit.TestKey)
		require.NoError(t, err)
		one, two := replica(t, st, rc, prefix), replica(t, st, rc, prefix)
		adm := admin.NewService(admin.Options{Store: st, Secrets: box, Integrations: one})
		ws := testkit.NewTenant(t, st.DB).Workspace.ID
		v, err := adm.CreateIntegration(ctx, ws, "test", admin.IntegrationInput{Name: "crm", Kind: admin.KindREST,
			BaseURL: "https://crm.example.test", Secrets: map[string]json.RawMessage{"bearer_token": json.RawMessage(`"old"`)}})
		require.NoError(t, err)

		secret := func(l *integration.Lookup) string {
			t.Helper()
			row, err := l.Integration(ctx, v.ID)
			require.NoError(t, err)
			var s map[string]string
			require.NoError(t, box.OpenJSON(row.SecretsEnc, &s))
			return s["bearer_token"]
		}
		require.Equal(t, "old", secret(two))
		require.Equal(t, "old", secret(one))
		require.True(t, two.Cached(v.ID), "a read is cached")

		_, err = adm.UpdateIntegration(ctx, ws, "test", v.ID, []byte(`{"secrets":{"bearer_token":"new"}}`))
		require.NoError(t, err)
		require.False(t, two.Cached(v.ID), "the change waited for the other replica's eviction")
		require.Equal(t, "new", secret(two), "the other replica's next call uses the new secret")
		require.Equal(t, "new", secret(one))

		require.NoError(t, adm.DeleteIntegration(ctx, ws, "test", v.ID))
		_, err = two.Integration(ctx, v.ID)
		require.Equal(t, apperr.NotFound, apperr.CodeOf(err), "a deleted integration is gone on the next call: %v", err)
	})
}

// TestIntegrationReadsAndNotFound: a row is read once and then served from
// the cache (counted with the database's own statements); an unknown or
// malformed id is not_found, and not cached.
func TestIntegrationReadsAndNotFound(t *testing.T) {
	t.Parallel()
	st := testkit.Tx(t)
	ctx := context.Background()
	ws := testkit.NewTenant(t, st.DB).Workspace.ID
	in := models.Integration{ID: models.NewID(), WorkspaceID: ws, Name: "crm", Kind: admin.KindREST}
	require.NoError(t, st.DB.Create(&in).Error)
	l, err := integration.New(integration.Options{DB: st.DB})
	require.NoError(t, err)

	got, err := l.Integration(ctx, in.ID)
	require.NoError(t, err)
	require.Equal(t, ws, got.WorkspaceID)
	require.True(t, l.Cached(in.ID))
	require.NoError(t, st.DB.Model(&models.Integration{}).Where("id = ?", in.ID).Update("name", "renamed").Error)
	got, err = l.Integration(ctx, in.ID)
	require.NoError(t, err)
	require.Equal(t, "crm", got.Name, "a young row is served from the cache, not re-read")

	for _, id := range []string{models.NewID(), "not-an-id"} {
		_, err = l.Integration(ctx, id)
		require.Equal(t, apperr.NotFound, apperr.CodeOf(err), id)
		require.False(t, l.Cached(id))
	}
}
