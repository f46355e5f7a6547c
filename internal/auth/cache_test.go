package auth_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/appruntime/appruntime/internal/apperr"
	"github.com/appruntime/appruntime/internal/auth"
	"github.com/appruntime/appruntime/internal/store"
	"github.com/appruntime/appruntime/internal/testkit"
	"github.com/appruntime/appruntime/models"
)

// TestTokenCacheServesFreshTokensAndRevocationsEverywhere: two replicas
// (two caches on one Redis) verify a token without reading its row while
// their entry is fresh; a revocation on one is refused by both at once,
// before their entries age; a row gone unannounced is refused once the
// entry is TokenMaxStaleness old; the scope still decides.
func TestTokenCacheServesFreshTokensAndRevocationsEverywhere(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st := testkit.Schema(t)
	rd := testkit.Redis(t)
	tn := testkit.NewTenant(t, st.DB)
	var mu sync.Mutex
	now := time.Now()
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	a, b := replica(t, st, rd, clock), replica(t, st, rd, clock)
	refused := func(c *auth.TokenCache, token, scope string) {
		t.Helper()
		_, err := c.Verify(ctx, token, scope)
		require.True(t, apperr.Is(err, apperr.Unauthenticated), "%v", err)
	}

	var host models.APIToken
	require.NoError(t, st.DB.Where("token_hash = ?", auth.HashToken(tn.HostToken)).Take(&host).Error)
	for _, c := range []*auth.TokenCache{a, b} {
		p, err := c.Verify(ctx, tn.HostToken, models.ScopeHost)
		require.NoError(t, err)
		require.Equal(t, tn.Admin.ID, p.UserID)
		refused(c, tn.HostToken, models.ScopeAgent)
	}

	// The agent token's row goes without an announcement: the cached entry
	// serves until it is TokenMaxStaleness old.
	_, err := a.Verify(ctx, tn.AgentToken, models.ScopeAgent)
	require.NoError(t, err)
	require.NoError(t, st.DB.Where("token_hash = ?", auth.HashToken(tn.AgentToken)).Delete(&models.APIToken{}).Error)
	_, err = a.Verify(ctx, tn.AgentToken, models.ScopeAgent)
	require.NoError(t, err, "served from the cache: no read")
	mu.Lock()
	now = now.Add(auth.TokenMaxStaleness)
	mu.Unlock()
	refused(a, tn.AgentToken, models.ScopeAgent)

	// A revocation announced on a is refused by b at once, even before the
	// row is updated (the announcement comes before the commit).
	_, err = b.Verify(ctx, tn.HostToken, models.ScopeHost)
	require.NoError(t, err)
	require.NoError(t, a.Revoke(ctx, host.ID))
	refused(a, tn.HostToken, models.ScopeHost)
	refused(b, tn.HostToken, models.ScopeHost)
	require.NoError(t, auth.RevokeToken(ctx, st.DB, tn.Workspace.ID, host.ID))
	refused(b, tn.HostToken, models.ScopeHost)
}

// TestTokenCacheRevokesManyTokensInOneCall: the tokens of one Revoke
// (a deleted workspace's, announced in batches) are refused by every
// replica at once, more of them than one announcement carries.
func TestTokenCacheRevokesManyTokensInOneCall(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st := testkit.Schema(t)
	rd := testkit.Redis(t)
	tn := testkit.NewTenant(t, st.DB)
	a, b := replica(t, st, rd, nil), replica(t, st, rd, nil)
	var rows []models.APIToken
	require.NoError(t, st.DB.Where("workspace_id = ?", tn.Workspace.ID).Find(&rows).Error)
	// Ids of no token come first, so the real ones ride in the last of
	// several announcements.
	ids := make([]string, 0, 600)
	for len(ids) < 600-len(rows) {
		ids = append(ids, models.NewID())
	}
	for _, r := range rows {
		ids = append(ids, r.ID)
	}
	tokens := map[string]string{tn.HostToken: models.ScopeHost, tn.AgentToken: models.ScopeAgent}
	for token, scope := range tokens {
		_, err := b.Verify(ctx, token, scope)
		require.NoError(t, err)
	}
	require.NoError(t, a.Revoke(ctx, ids...))
	for token, scope := range tokens {
		_, err := b.Verify(ctx, token, scope)
		require.True(t, apperr.Is(err, apperr.Unauthenticated), "%s on the other replica: %v", scope, err)
	}
}

// replica is one replica's token cache on st and rd, its clock now (nil:
// the real one), closed when t ends.
func replica(t *testing.T, st *store.Store, rd testkit.RedisEnv, now func() time.Time) *auth.TokenCache {
	t.Helper()
	c, err := auth.NewTokenCache(auth.TokenCacheOptions{DB: st.DB, Redis: rd.Client, KeyPrefix: rd.Prefix, NowFunc: now})
	require.NoError(t, err)
	t.Cleanup(c.Close)
	return c
}
