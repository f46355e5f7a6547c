package session

import (
	"context"
	"crypto/rand"
	"crypto/rsa"
	"strings"
	"testing"
	"time"
	"unsafe"

	"github.com/golang-jwt/jwt/v5"
	"github.com/stretchr/testify/require"
	"golang.org/x/sync/errgroup"
	"gorm.io/gorm"

	"github.com/appruntime/appruntime/internal/apperr"
	"github.com/appruntime/appruntime/internal/config"
	"github.com/appruntime/appruntime/internal/store"
	"github.com/appruntime/appruntime/internal/testkit"
	"github.com/appruntime/appruntime/models"
)

const testIssuer = "appruntime-test"

var (
	oldKey   = config.Key{ID: "k-old", Secret: []byte("old-session-key-0123456789abcdef")}
	newKey   = config.Key{ID: "k-new", Secret: []byte("new-session-key-0123456789abcdef")}
	wrongKey = []byte("not-the-ring-key-0123456789abcdef")
)

// env is one test's database, Redis prefix and an app-tool step to mint for.
type env struct {
	st     *store.Store
	redis  testkit.RedisEnv
	tenant testkit.Tenant
	task   models.Task
	step   models.Step
	input  MintInput
}

func newEnv(t *testing.T) env { t.Helper(); return newEnvOn(t, testkit.Tx(t)) }

// newEnvOn is newEnv on a store of the caller's choice (the dev mode's SQLite).
func newEnvOn(t *testing.T, st *store.Store) env {
	t.Helper()
	e := env{st: st, redis: testkit.Redis(t), tenant: testkit.NewTenant(t, st.DB)}
	e.task = models.Task{ID: models.NewID(), WorkspaceID: e.tenant.Workspace.ID, AgentID: e.tenant.Agent.ID, Status: models.TaskRunning}
	require.NoError(t, st.DB.Create(&e.task).Error)
	e.step = models.Step{ID: models.NewID(), TaskID: e.task.ID, Kind: models.StepAppTool, Status: models.StepCompleted}
	require.NoError(t, st.DB.Create(&e.step).Error)
	e.input = MintInput{
		WorkspaceID: e.tenant.Workspace.ID, TaskID: e.task.ID, AgentID: e.tenant.Agent.ID, StepID: e.step.ID,
		ConfiguredToolID: models.NewID(), BindingID: models.NewID(), UserID: e.tenant.Admin.ID,
	}
	return e
}

// issuer builds an Issuer on the env's store and Redis with ring keys, as a
// replica configured with that ring would.
func (e env) issuer(t *testing.T, keys ...config.Key) *Issuer {
	t.Helper()
	i, err := NewIssuer(IssuerOptions{Store: e.st, Redis: e.redis.Client, KeyPrefix: e.redis.Prefix, Keys: keys, Issuer: testIssuer})
	require.NoError(t, err)
	return i
}

// validClaims are the claims a real mint would write, for tests to spoil.
func validClaims(in MintInput) tokenClaims {
	now := time.Now()
	return tokenClaims{
		RegisteredClaims: jwt.RegisteredClaims{
			ID:        models.NewID(),
			Issuer:    testIssuer,
			Audience:  jwt.ClaimStrings{Audience},
			IssuedAt:  jwt.NewNumericDate(now),
			NotBefore: jwt.NewNumericDate(now),
			ExpiresAt: jwt.NewNumericDate(now.Add(TTL)),
		},
		WorkspaceID: in.WorkspaceID, TaskID: in.TaskID, AgentID: in.AgentID, StepID: in.StepID,
		ConfiguredToolID: in.ConfiguredToolID, BindingID: in.BindingID, UserID: in.UserID,
	}
}

// sign signs claims with method and key, putting kid in the header when not empty.
func sign(t *testing.T, method jwt.SigningMethod, key any, kid string, claims jwt.Claims) string {
	t.Helper()
	tok := jwt.NewWithClaims(method, claims)
	if kid != "" {
		tok.Header["kid"] = kid
	}
	s, err := tok.SignedString(key)
	require.NoError(t, err)
	return s
}

// requireRefused asserts err is a 401 carrying message.
func requireRefused(t *testing.T, err error, message string) {
	t.Helper()
	require.Error(t, err)
	require.Equal(t, 401, apperr.Status(apperr.CodeOf(err)), "error: %v", err)
	_, _, msg := apperr.Public(err)
	require.Equal(t, message, msg)
}

func TestMintedTokenRoundTripsItsClaims(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	iss := e.issuer(t, newKey, oldKey)
	ctx := context.Background()

	token, minted, err := iss.Mint(ctx, e.input)
	require.NoError(t, err)
	require.True(t, models.IsID(minted.SessionID))
	require.WithinDuration(t, time.Now().Add(TTL), minted.ExpiresAt, 2*time.Second)

	got, err := iss.Verify(ctx, token)
	require.NoError(t, err)
	require.Equal(t, minted, got)
	require.Equal(t, Claims{
		SessionID: minted.SessionID, WorkspaceID: e.input.WorkspaceID, TaskID: e.input.TaskID,
		AgentID: e.input.AgentID, StepID: e.input.StepID, ConfiguredToolID: e.input.ConfiguredToolID,
		BindingID: e.input.BindingID, UserID: e.input.UserID, ExpiresAt: minted.ExpiresAt, Kind: KindTask,
	}, got)

	// The header names the signing key, and the registered claims are the contract's.
	parsed, _, err := jwt.NewParser().ParseUnverified(token, &tokenClaims{})
	require.NoError(t, err)
	require.Equal(t, "k-new", parsed.Header["kid"])
	require.Equal(t, "HS256", parsed.Header["alg"])
	tc := parsed.Claims.(*tokenClaims)
	require.Equal(t, testIssuer, tc.Issuer)
	require.Equal(t, jwt.ClaimStrings{"app-runtime"}, tc.Audience)
	require.Equal(t, tc.IssuedAt.Time, tc.NotBefore.Time)
	require.Equal(t, TTL, tc.ExpiresAt.Sub(tc.IssuedAt.Time))

	var row models.AppSession
	require.NoError(t, e.st.DB.Take(&row, "id = ?", minted.SessionID).Error)
	require.Equal(t, e.step.ID, row.StepID)
	require.Equal(t, e.task.ID, row.TaskID)
	require.Equal(t, e.tenant.Admin.ID, *row.UserID)
	require.Nil(t, row.RevokedAt)
	require.True(t, row.ExpiresAt.Equal(minted.ExpiresAt))
}

func TestVerifyRefusesBadTokens(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	iss := e.issuer(t, newKey, oldKey)
	rsaKey, err := rsa.GenerateKey(rand.Reader, 2048)
	require.NoError(t, err)
	spoil := func(f func(*tokenClaims)) tokenClaims {
		c := validClaims(e.input)
		f(&c)
		return c
	}
	valid := validClaims(e.input)
	hs256 := func(c jwt.Claims) string { return sign(t, jwt.SigningMethodHS256, newKey.Secret, newKey.ID, c) }

	cases := []struct {
		name, token, message string
	}{
		{"empty", "", "session token required"},
		{"garbage", "not-a-jwt", "session token malformed"},
		{"garbage with dots", "a.b.c", "session token malformed"},
		{"expired", hs256(spoil(func(c *tokenClaims) {
			c.IssuedAt = jwt.NewNumericDate(time.Now().Add(-TTL - time.Minute))
			c.NotBefore = c.IssuedAt
			c.ExpiresAt = jwt.NewNumericDate(time.Now().Add(-time.Minute))
		})), "session token expired"},
		{"expired beyond leeway", hs256(spoil(func(c *tokenClaims) {
			c.ExpiresAt = jwt.NewNumericDate(time.Now().Add(-Leeway - 2*time.Second))
		})), "session token expired"},
		{"not valid yet", hs256(spoil(func(c *tokenClaims) {
			c.NotBefore = jwt.NewNumericDate(time.Now().Add(time.Minute))
		})), "session token not valid yet"},
		{"wrong audience", hs256(spoil(func(c *tokenClaims) { c.Audience = jwt.ClaimStrings{"console"} })), "session token audience invalid"},
		{"no audience", hs256(spoil(func(c *tokenClaims) { c.Audience = nil })), "session token lacks a required claim"},
		{"wrong issuer", hs256(spoil(func(c *tokenClaims) { c.Issuer = "someone-else" })), "session token issuer invalid"},
		{"alg none", sign(t, jwt.SigningMethodNone, jwt.UnsafeAllowNoneSignatureType, newKey.ID, valid), "session token algorithm not accepted"},
		{"HS256 signed with a wrong key", sign(t, jwt.SigningMethodHS256, wrongKey, newKey.ID, valid), "session token signature invalid"},
		{"HS512 header", sign(t, jwt.SigningMethodHS512, newKey.Secret, newKey.ID, valid), "session token algorithm not accepted"},
		{"RS256 header", sign(t, jwt.SigningMethodRS256, rsaKey, newKey.ID, valid), "session token algorithm not accepted"},
		{"unknown kid", sign(t, jwt.SigningMethodHS256, newKey.Secret, "k-other", valid), "session token key id unknown"},
		{"missing kid", sign(t, jwt.SigningMethodHS256, newKey.Secret, "", valid), "session token has no key id"},
		{"missing exp", hs256(spoil(func(c *tokenClaims) { c.ExpiresAt = nil })), "session token lacks a required claim"},
		{"missing nbf", hs256(spoil(func(c *tokenClaims) { c.NotBefore = nil })), "session token lacks a required claim"},
		{"missing iat", hs256(spoil(func(c *tokenClaims) { c.IssuedAt = nil })), "session token lacks a required claim"},
		{"missing jti", hs256(spoil(func(c *tokenClaims) { c.ID = "" })), "session token claims incomplete"},
		{"missing step", hs256(spoil(func(c *tokenClaims) { c.StepID = "" })), "session token claims incomplete"},
		{"task not a UUID", hs256(spoil(func(c *tokenClaims) { c.TaskID = "task-1" })), "session token claims incomplete"},
		{"lifetime over the TTL", hs256(spoil(func(c *tokenClaims) {
			c.ExpiresAt = jwt.NewNumericDate(time.Now().Add(24 * time.Hour))
		})), "session token lifetime too long"},
		{"exp of the wrong type", sign(t, jwt.SigningMethodHS256, newKey.Secret, newKey.ID, jwt.MapClaims{
			"jti": models.NewID(), "iss": testIssuer, "aud": Audience, "exp": "tomorrow",
		}), "session token malformed"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, err := iss.Verify(context.Background(), tc.token)
			requireRefused(t, err, tc.message)
		})
	}

	// The untouched claims pass, so each case above fails for its own reason.
	_, err = iss.Verify(context.Background(), hs256(valid))
	require.NoError(t, err)
	// A token expired less than Leeway ago is still accepted (clock skew).
	_, err = iss.Verify(context.Background(), hs256(spoil(func(c *tokenClaims) {
		c.ExpiresAt = jwt.NewNumericDate(time.Now().Add(-2 * time.Second))
	})))
	require.NoError(t, err)
}

func TestRevokedTokenIsRefusedByEveryReplica(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	a, b := e.issuer(t, newKey), e.issuer(t, newKey)
	ctx := context.Background()
	token, claims, err := a.Mint(ctx, e.input)
	require.NoError(t, err)
	_, err = b.Verify(ctx, token)
	require.NoError(t, err)

	require.NoError(t, a.Revoke(ctx, claims.SessionID))
	_, err = b.Verify(ctx, token)
	requireRefused(t, err, "session token revoked")
	_, err = a.Verify(ctx, token)
	requireRefused(t, err, "session token revoked")

	var row models.AppSession
	require.NoError(t, e.st.DB.Take(&row, "id = ?", claims.SessionID).Error)
	require.NotNil(t, row.RevokedAt)
	// A replica that starts (or reconnects) after the revocation loads it.
	late := e.issuer(t, newKey)
	_, err = late.Verify(ctx, token)
	requireRefused(t, err, "session token revoked")

	// Revoking again is harmless; an unknown or malformed id is not.
	require.NoError(t, a.Revoke(ctx, claims.SessionID))
	err = a.Revoke(ctx, models.NewID())
	require.Equal(t, apperr.NotFound, apperr.CodeOf(err))
	err = a.Revoke(ctx, "nope")
	require.Equal(t, apperr.Invalid, apperr.CodeOf(err))
}

func TestRevokingAUsersOrATokensSessionsEndsThoseOnlyOnEveryReplica(t *testing.T) {
	t.Parallel()
	e := newEnvOn(t, testkit.Schema(t))
	a, b := e.issuer(t, newKey), e.issuer(t, newKey)
	ctx := context.Background()
	other := testkit.NewTenant(t, e.st.DB) // another user, with a host token of their own
	var hostToken models.APIToken
	require.NoError(t, e.st.DB.Where("user_id = ? AND scope = ?", other.Admin.ID, models.ScopeHost).Take(&hostToken).Error)

	mint := func(userID, tokenID string) string {
		in := e.input
		in.UserID, in.TokenID = userID, tokenID
		token, _, err := a.Mint(ctx, in)
		require.NoError(t, err)
		return token
	}
	// Two live sessions per task at most: a task of its own for each.
	withToken := mint(other.Admin.ID, hostToken.ID)
	e.input.TaskID, e.input.StepID = newTaskStep(t, e)
	mine := mint(e.tenant.Admin.ID, "")

	require.NoError(t, e.st.Tx(ctx, func(tx *gorm.DB) error { return a.RevokeTokenSessions(ctx, tx, hostToken.ID) }))
	for _, replica := range []*Issuer{a, b} {
		_, err := replica.Verify(ctx, withToken)
		requireRefused(t, err, "session token revoked")
		_, err = replica.Verify(ctx, mine)
		require.NoError(t, err, "another user's session lives on")
	}
	require.NoError(t, e.st.Tx(ctx, func(tx *gorm.DB) error { return a.RevokeUserSessions(ctx, tx, e.tenant.Admin.ID) }))
	for _, replica := range []*Issuer{a, b} {
		_, err := replica.Verify(ctx, mine)
		requireRefused(t, err, "session token revoked")
	}
	// Nothing left to revoke is no error.
	require.NoError(t, e.st.Tx(ctx, func(tx *gorm.DB) error { return a.RevokeUserSessions(ctx, tx, models.NewID()) }))
}

// newTaskStep adds a running task with one app-tool step to e's tenant.
func newTaskStep(t *testing.T, e env) (taskID, stepID string) {
	t.Helper()
	task := models.Task{ID: models.NewID(), WorkspaceID: e.tenant.Workspace.ID, AgentID: e.tenant.Agent.ID, Status: models.TaskRunning}
	require.NoError(t, e.st.DB.Create(&task).Error)
	step := models.Step{ID: models.NewID(), TaskID: task.ID, Kind: models.StepAppTool, Status: models.StepCompleted}
	require.NoError(t, e.st.DB.Create(&step).Error)
	return task.ID, step.ID
}

func TestRotatedKeyRing(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ctx := context.Background()
	before := e.issuer(t, oldKey)         // a replica not yet rotated
	during := e.issuer(t, newKey, oldKey) // rotated: new key signs, old still verifies
	after := e.issuer(t, newKey)          // old key dropped

	oldToken, _, err := before.Mint(ctx, e.input)
	require.NoError(t, err)
	newToken, _, err := during.Mint(ctx, e.input)
	require.NoError(t, err)

	_, err = during.Verify(ctx, oldToken)
	require.NoError(t, err, "a token of a key still in the ring verifies")
	_, err = during.Verify(ctx, newToken)
	require.NoError(t, err)
	_, err = after.Verify(ctx, newToken)
	require.NoError(t, err)
	_, err = after.Verify(ctx, oldToken)
	requireRefused(t, err, "session token key id unknown")
	_, err = before.Verify(ctx, newToken)
	requireRefused(t, err, "session token key id unknown")
}

func TestThirdMintRevokesTheOldest(t *testing.T) {
	t.Parallel()
	for name, open := range map[string]func(testing.TB) *store.Store{"postgres": testkit.Tx, "sqlite": testkit.SQLite} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			thirdMintRevokesTheOldest(t, newEnvOn(t, open(t)))
		})
	}
}

func thirdMintRevokesTheOldest(t *testing.T, e env) {
	iss := e.issuer(t, newKey)
	ctx := context.Background()

	var tokens []string
	var ids []string
	for range 3 {
		tok, c, err := iss.Mint(ctx, e.input)
		require.NoError(t, err)
		tokens, ids = append(tokens, tok), append(ids, c.SessionID)
	}
	_, err := iss.Verify(ctx, tokens[0])
	requireRefused(t, err, "session token revoked")
	for _, tok := range tokens[1:] {
		_, err := iss.Verify(ctx, tok)
		require.NoError(t, err)
	}
	var live []string
	require.NoError(t, e.st.DB.Model(&models.AppSession{}).Where("task_id = ? AND revoked_at IS NULL", e.task.ID).
		Order("created_at").Pluck("id", &live).Error)
	require.Equal(t, ids[1:], live)

	// A fourth revokes the second; the count of live sessions stays two.
	tok4, _, err := iss.Mint(ctx, e.input)
	require.NoError(t, err)
	_, err = iss.Verify(ctx, tokens[1])
	requireRefused(t, err, "session token revoked")
	for _, tok := range []string{tokens[2], tok4} {
		_, err := iss.Verify(ctx, tok)
		require.NoError(t, err)
	}
}

func TestMintRefusals(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ctx := context.Background()

	_, _, err := e.issuer(t).Mint(ctx, e.input)
	require.Equal(t, apperr.NotImplemented, apperr.CodeOf(err), "a ring without keys cannot mint")

	in := e.input
	in.StepID = "step-1"
	_, _, err = e.issuer(t, newKey).Mint(ctx, in)
	require.Equal(t, apperr.Invalid, apperr.CodeOf(err))
	require.Contains(t, err.Error(), "step_id")

	in = e.input
	in.WorkspaceID = models.NewID() // the task is not in this workspace
	_, _, err = e.issuer(t, newKey).Mint(ctx, in)
	require.Equal(t, apperr.NotFound, apperr.CodeOf(err))
}

func TestNewIssuerRefusesABadRing(t *testing.T) {
	t.Parallel()
	for name, keys := range map[string][]config.Key{
		"short key":     {{ID: "k", Secret: []byte("short")}},
		"duplicate kid": {newKey, {ID: newKey.ID, Secret: oldKey.Secret}},
		"missing kid":   {{Secret: newKey.Secret}},
	} {
		_, err := NewKeyRing(keys)
		require.Error(t, err, name)
	}
}

func TestConcurrentMintsLeaveTwoLive(t *testing.T) {
	t.Parallel()
	e := newEnvOn(t, testkit.Schema(t)) // committed rows, so the mints really race
	iss := e.issuer(t, newKey)
	ctx := context.Background()
	const mints = 8
	tokens := make([]string, mints)
	var g errgroup.Group
	for n := range mints {
		g.Go(func() error {
			tok, _, err := iss.Mint(ctx, e.input)
			tokens[n] = tok
			return err
		})
	}
	require.NoError(t, g.Wait())

	var live int64
	require.NoError(t, e.st.DB.Model(&models.AppSession{}).Where("task_id = ? AND revoked_at IS NULL", e.task.ID).Count(&live).Error)
	require.Equal(t, int64(MaxLiveSessionsPerTask), live)
	verified := 0
	for _, tok := range tokens {
		if _, err := iss.Verify(ctx, tok); err == nil {
			verified++
		} else {
			requireRefused(t, err, "session token revoked")
		}
	}
	require.Equal(t, MaxLiveSessionsPerTask, verified)
}

func TestACachedTokenStillExpires(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	iss := e.issuer(t, newKey)
	ctx := context.Background()
	token, claims, err := iss.Mint(ctx, e.input)
	require.NoError(t, err)
	for range 2 { // the second call is served from the verified-token cache
		_, err = iss.Verify(ctx, token)
		require.NoError(t, err)
	}
	iss.now = func() time.Time { return claims.ExpiresAt.Add(Leeway - time.Second) }
	_, err = iss.Verify(ctx, token)
	require.NoError(t, err, "within the leeway")
	iss.now = func() time.Time { return claims.ExpiresAt.Add(Leeway + time.Second) }
	_, err = iss.Verify(ctx, token)
	requireRefused(t, err, "session token expired")
}

// TestTheTokenCacheKeepsItsOwnCopyOfTheToken: the API hands Verify a token
// that shares memory with the request's header buffer, which the server
// overwrites with the next request's headers. A cache keyed by that memory
// would end up keyed by whatever token came next, so a forged token written
// into the same bytes could be served the first token's claims.
func TestTheTokenCacheKeepsItsOwnCopyOfTheToken(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	iss := e.issuer(t, newKey)
	t.Cleanup(iss.Close)
	ctx := context.Background()
	token, _, err := iss.Mint(ctx, e.input)
	require.NoError(t, err)

	buf := []byte(token) // stands in for the server's reused header buffer
	_, err = iss.Verify(ctx, unsafe.String(&buf[0], len(buf)))
	require.NoError(t, err)

	// Forgeries of the same length land in the same buffer, as the next
	// requests' headers would; each is sent as a string of its own.
	sig := strings.LastIndexByte(token, '.') + 1
	const alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"
	forged := 0
	for _, at := range []int{sig + 3, sig + 11, sig + 19} {
		for _, ch := range []byte(alphabet) {
			if token[at] == ch {
				continue
			}
			copy(buf, token)
			buf[at] = ch
			_, err := iss.Verify(ctx, string(buf))
			requireRefused(t, err, "session token signature invalid")
			forged++
		}
	}
	require.Greater(t, forged, 150)

	copy(buf, strings.Repeat("x", len(buf)))
	var keys []string
	iss.verified.Range(func(k, _ any) bool { keys = append(keys, k.(string)); return true })
	require.Equal(t, []string{token}, keys, "the cache is keyed by the token as verified")
}

// TestARenewalReplacesOnlyTheCallersOwnSession: a mint that renews the
// caller's session revokes that one and leaves another user's session on
// the task live (a plain third mint would have ended the oldest, theirs);
// a Replaces naming someone else's session, or one of another step,
// replaces nothing.
func TestARenewalReplacesOnlyTheCallersOwnSession(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	iss := e.issuer(t, newKey)
	ctx := context.Background()
	reviewer := models.User{ID: models.NewID(), WorkspaceID: e.tenant.Workspace.ID, Email: "rita-" + e.task.ID[:8] + "@example.test", Role: models.RoleReviewer}
	require.NoError(t, e.st.DB.Create(&reviewer).Error)
	theirs := e.input
	theirs.UserID = reviewer.ID

	theirToken, their, err := iss.Mint(ctx, theirs)
	require.NoError(t, err)
	mineToken, mine, err := iss.Mint(ctx, e.input)
	require.NoError(t, err)

	renew := e.input
	renew.Replaces = mine.SessionID
	renewedToken, _, err := iss.Mint(ctx, renew)
	require.NoError(t, err)
	_, err = iss.Verify(ctx, mineToken)
	requireRefused(t, err, "session token revoked")
	for _, tok := range []string{theirToken, renewedToken} {
		_, err := iss.Verify(ctx, tok)
		require.NoError(t, err, "the other user's session and the renewal stay live")
	}

	for name, replaces := range map[string]string{
		"another user's session": their.SessionID,
		"an unknown session":     models.NewID(),
	} {
		in := e.input
		in.Replaces = replaces
		_, _, err := iss.Mint(ctx, in)
		require.NoError(t, err, name)
	}
	// Neither replaced anything: each counted, and the oldest (theirs,
	// then the renewal) went by the two-live rule.
	_, err = iss.Verify(ctx, theirToken)
	requireRefused(t, err, "session token revoked")
	_, err = iss.Verify(ctx, renewedToken)
	requireRefused(t, err, "session token revoked")
}

// TestTheIssuersTTL: a configured TTL shorter than the seed's is the
// tokens' lifetime; zero or a longer one is the seed's.
func TestTheIssuersTTL(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ctx := context.Background()
	for ttl, want := range map[time.Duration]time.Duration{0: TTL, 6 * time.Second: 6 * time.Second, time.Hour: TTL} {
		i, err := NewIssuer(IssuerOptions{Store: e.st, Redis: e.redis.Client, KeyPrefix: e.redis.Prefix, Keys: []config.Key{newKey}, Issuer: testIssuer, TTL: ttl})
		require.NoError(t, err)
		t.Cleanup(i.Close)
		tok, c, err := i.Mint(ctx, e.input)
		require.NoError(t, err)
		require.WithinDuration(t, time.Now().Add(want), c.ExpiresAt, 2*time.Second, "ttl %s", ttl)
		_, err = i.Verify(ctx, tok)
		require.NoError(t, err)
	}
}

// TestAnAppsRenewalReplacesItsOwnTokensSession: a session with no user (an
// MCP app's, minted with the agent's token) is renewed by a mint with the
// same token naming it: it is revoked, and a reviewer's live session on
// the task stays (a plain mint would have ended the oldest, the
// reviewer's). The same Replaces with another token replaces nothing.
func TestAnAppsRenewalReplacesItsOwnTokensSession(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	iss := e.issuer(t, newKey)
	ctx := context.Background()
	tokenOf := func(scope string) string {
		t.Helper()
		var ids []string
		require.NoError(t, e.st.DB.Model(&models.APIToken{}).Where("workspace_id = ? AND scope = ?", e.tenant.Workspace.ID, scope).Pluck("id", &ids).Error)
		require.NotEmpty(t, ids, scope)
		return ids[0]
	}
	agentToken, hostToken := tokenOf(models.ScopeAgent), tokenOf(models.ScopeHost)

	reviewerToken, _, err := iss.Mint(ctx, e.input)
	require.NoError(t, err)
	app := e.input
	app.UserID, app.TokenID = "", agentToken
	appToken, first, err := iss.Mint(ctx, app)
	require.NoError(t, err)

	renew := app
	renew.Replaces = first.SessionID
	renewedToken, renewed, err := iss.Mint(ctx, renew)
	require.NoError(t, err)
	_, err = iss.Verify(ctx, appToken)
	requireRefused(t, err, "session token revoked")
	for _, tok := range []string{reviewerToken, renewedToken} {
		_, err := iss.Verify(ctx, tok)
		require.NoError(t, err, "the reviewer's session and the renewal stay live")
	}

	other := app
	other.TokenID, other.Replaces = hostToken, renewed.SessionID
	_, _, err = iss.Mint(ctx, other)
	require.NoError(t, err)
	_, err = iss.Verify(ctx, reviewerToken)
	requireRefused(t, err, "session token revoked")
	_, err = iss.Verify(ctx, renewedToken)
	require.NoError(t, err, "another token's mint replaced nothing: the oldest (the reviewer's) went by the two-live rule")
}
