package session

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"github.com/redis/go-redis/v9"
	"gorm.io/gorm"
	"gorm.io/gorm/clause"

	"github.com/appruntime/appruntime/internal/apperr"
	"github.com/appruntime/appruntime/internal/config"
	"github.com/appruntime/appruntime/internal/rdb"
	"github.com/appruntime/appruntime/internal/store"
	"github.com/appruntime/appruntime/models"
)

// TTL is how long a session token lives (seed 000: "the 15-minute session").
const TTL = 15 * time.Minute

// Audience is the aud of every session token: only the runtime API accepts them.
const Audience = "app-runtime"

// Leeway is the clock skew tolerated between replicas when checking exp,
// nbf and iat; small, so an expired token stops working almost at once.
const Leeway = 5 * time.Second

// MaxLiveSessionsPerTask is how many sessions of one task may be live at once;
// minting one more revokes the oldest (seed 004's "at most two apps run at
// once; a third stops the oldest", docs/architecture.md#4-two-apps-per-task).
const MaxLiveSessionsPerTask = 2

// signingMethod is the one algorithm sessions are signed and verified with;
// the parser refuses every other, "none" included.
var signingMethod = jwt.SigningMethodHS256

// Issuer mints, verifies and revokes session tokens. It is safe for
// concurrent use; every API replica builds one over the same database and
// Redis, so a revocation on one is refused by all.
//
// Verify makes no network round trip: revoked session ids are kept in a
// process-local set that every revocation reaches on every replica through
// an acknowledged broadcast before Revoke returns, and that is rebuilt from
// app_sessions whenever the broadcast (re)subscribes. Tokens already verified
// are cached, so a bundle's repeated calls skip the signature and JSON work.
type Issuer struct {
	db        *gorm.DB
	broadcast *rdb.Broadcast
	ring      *KeyRing
	issuer    string
	ttl       time.Duration
	parser    *jwt.Parser
	now       func() time.Time

	revoked   sync.Map // session id → time.Time (the token's expiry)
	verified  sync.Map // token string → *Claims, never modified once stored
	cached    atomic.Int64
	revokeOps atomic.Int64
}

// IssuerOptions are what an Issuer is built from.
type IssuerOptions struct {
	Store     *store.Store
	Redis     redis.UniversalClient
	KeyPrefix string       // starts the revocation broadcast's channel and keys
	Keys      []config.Key // config.Config.SessionKeys: the first signs, all verify
	Issuer    string       // config.Config.SessionIssuer: the iss minted and required
	// TTL is how long a minted token lives (config.Config.SessionTTL); zero,
	// or anything longer, is the seed's TTL.
	TTL time.Duration
	Log *slog.Logger
}

// maxCachedTokens bounds the verified-token cache; past it the cache is
// emptied (tokens are re-verified on their next call).
const maxCachedTokens = 50_000

// revokeWait bounds how long a revocation waits for every replica to
// acknowledge it; subscribeTimeout bounds NewIssuer's wait for its subscription.
const (
	revokeWait       = 2 * time.Second
	subscribeTimeout = 10 * time.Second
)

// NewIssuer builds an Issuer and subscribes it to revocations; Close stops
// it. An empty key ring is allowed (see NewKeyRing).
func NewIssuer(o IssuerOptions) (*Issuer, error) {
	ring, err := NewKeyRing(o.Keys)
	if err != nil {
		return nil, err
	}
	if o.Issuer == "" {
		return nil, fmt.Errorf("session: an issuer name is required")
	}
	if o.Redis == nil {
		return nil, fmt.Errorf("session: Redis is required (revocations reach every replica through it)")
	}
	log := o.Log
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	i := &Issuer{
		db:        o.Store.DB,
		broadcast: rdb.NewBroadcast(o.Redis, o.KeyPrefix, "session:revoked", log),
		ring:      ring,
		issuer:    o.Issuer,
		ttl:       o.TTL,
		now:       time.Now,
	}
	if i.ttl <= 0 || i.ttl > TTL {
		i.ttl = TTL
	}
	i.parser = jwt.NewParser(append(parserOptions(o.Issuer), jwt.WithTimeFunc(func() time.Time { return i.now() }))...)
	if err := i.broadcast.Listen(i.applyRevocation, i.resyncRevocations, subscribeTimeout); err != nil {
		return nil, fmt.Errorf("session: %w", err)
	}
	return i, nil
}

// parserOptions are the strict parser's rules: HS256 only; exp, nbf and iat
// required and checked within Leeway; iss and aud checked; strict base64
// (non-zero padding bits refused).
func parserOptions(issuer string) []jwt.ParserOption {
	return []jwt.ParserOption{
		jwt.WithValidMethods([]string{signingMethod.Alg()}),
		jwt.WithExpirationRequired(),
		jwt.WithNotBeforeRequired(),
		jwt.WithIssuedAt(),
		jwt.WithIssuer(issuer),
		jwt.WithAudience(Audience),
		jwt.WithLeeway(Leeway),
		jwt.WithStrictDecoding(),
	}
}

// Close stops listening for revocations.
func (i *Issuer) Close() {
	i.broadcast.Close()
}

// tokenClaims is the JWT payload: the registered claims (jti is the session
// id) plus the ids the runtime scopes every call by.
type tokenClaims struct {
	jwt.RegisteredClaims
	WorkspaceID      string `json:"workspace_id"`
	TaskID           string `json:"task_id"`
	AgentID          string `json:"agent_id"`
	StepID           string `json:"step_id"`
	ConfiguredToolID string `json:"configured_tool_id"`
	BindingID        string `json:"binding_id"`
	UserID           string `json:"user_id"`
	Kind             string `json:"kind,omitempty"` // "preview", or absent for a task's session
}

// MintInput names what a session is for. Every id but UserID is required.
type MintInput struct {
	WorkspaceID      string
	TaskID           string
	AgentID          string
	StepID           string
	ConfiguredToolID string
	BindingID        string
	UserID           string // the reviewer the host minted for; may be empty
	// TokenID is the host token the session is minted with (empty when a
	// console admin mints): revoking that token ends the session.
	TokenID string
	// Replaces is a live session of the same user on the same step that this
	// mint renews (the SDK's renew_session; for a session with no user, one
	// minted with the same TokenID): it is revoked in the same
	// transaction instead of counting against MaxLiveSessionsPerTask, so a
	// renewal never ends another reviewer's session. Empty, or not such a
	// session, replaces nothing.
	Replaces string
	// GuardFunc, when set, runs inside the mint's transaction once the task's
	// row is locked, before any session is revoked or recorded: its error
	// refuses the mint (a review claim held by someone else,
	// claim.Check), and the lock keeps what it checked from changing
	// until the session is recorded.
	GuardFunc func(ctx context.Context, tx *gorm.DB) error
}

// Mint issues a session token for in, living the issuer's TTL, and records
// it in app_sessions. The session in.Replaces names is revoked first; when
// the task still has MaxLiveSessionsPerTask live sessions, the oldest are
// revoked in the same transaction and put on the denylist before it
// commits, so a failure never leaves three live.
func (i *Issuer) Mint(ctx context.Context, in MintInput) (string, Claims, error) {
	key, ok := i.ring.signingKey()
	if !ok {
		return "", Claims{}, apperr.NotImplementedf("session keys are not configured on this deployment")
	}
	if err := in.validate(); err != nil {
		return "", Claims{}, err
	}
	issued := time.Now().UTC()
	now := issued.Truncate(time.Second) // JWT times are whole seconds
	c := Claims{
		SessionID:        models.NewID(),
		WorkspaceID:      in.WorkspaceID,
		TaskID:           in.TaskID,
		AgentID:          in.AgentID,
		StepID:           in.StepID,
		ConfiguredToolID: in.ConfiguredToolID,
		BindingID:        in.BindingID,
		UserID:           in.UserID,
		ExpiresAt:        now.Add(i.ttl),
		Kind:             KindTask,
	}
	signed, err := i.sign(key, c, now)
	if err != nil {
		return "", Claims{}, err
	}

	err = i.db.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		// Lock the task so that concurrent mints on it count live sessions
		// one after another (SQLite serialises writers anyway).
		var task models.Task
		err := tx.Clauses(clause.Locking{Strength: "UPDATE"}).Select("id").
			Where("id = ? AND workspace_id = ?", in.TaskID, in.WorkspaceID).Take(&task).Error
		if err := store.NotFound(err, "session: lock task", "task "+in.TaskID); err != nil {
			return err
		}
		if in.GuardFunc != nil {
			if err := in.GuardFunc(ctx, tx); err != nil {
				return err
			}
		}
		var live []models.AppSession
		if err := tx.Where("task_id = ? AND revoked_at IS NULL AND expires_at > ?", in.TaskID, now).
			Order("created_at, id").Find(&live).Error; err != nil {
			return fmt.Errorf("session: list live sessions: %w", err)
		}
		if n := slices.IndexFunc(live, func(r models.AppSession) bool { return in.replaces(r) }); n >= 0 {
			if err := i.revokeRows(ctx, tx, live[n:n+1], now); err != nil {
				return err
			}
			live = slices.Delete(live, n, n+1)
		}
		if excess := len(live) - (MaxLiveSessionsPerTask - 1); excess > 0 {
			if err := i.revokeRows(ctx, tx, live[:excess], now); err != nil {
				return err
			}
		}
		row := models.AppSession{
			ID: c.SessionID, WorkspaceID: c.WorkspaceID, TaskID: c.TaskID, StepID: c.StepID,
			ExpiresAt: c.ExpiresAt, CreatedAt: issued, // the claims' instant, not after the task lock's wait
		}
		if c.UserID != "" {
			row.UserID = &c.UserID
		}
		if in.TokenID != "" {
			row.TokenID = &in.TokenID
		}
		if err := tx.Create(&row).Error; err != nil {
			return fmt.Errorf("session: record session: %w", err)
		}
		return nil
	})
	if err != nil {
		return "", Claims{}, err
	}
	return signed, c, nil
}

// sign signs c, issued at now, with key.
func (i *Issuer) sign(key config.Key, c Claims, now time.Time) (string, error) {
	kind := c.Kind
	if kind == KindTask {
		kind = "" // a task session's token carries no kind, as before previews
	}
	tok := jwt.NewWithClaims(signingMethod, tokenClaims{
		RegisteredClaims: jwt.RegisteredClaims{
			ID:        c.SessionID,
			Issuer:    i.issuer,
			Audience:  jwt.ClaimStrings{Audience},
			IssuedAt:  jwt.NewNumericDate(now),
			NotBefore: jwt.NewNumericDate(now),
			ExpiresAt: jwt.NewNumericDate(c.ExpiresAt),
		},
		WorkspaceID: c.WorkspaceID, TaskID: c.TaskID, AgentID: c.AgentID, StepID: c.StepID,
		ConfiguredToolID: c.ConfiguredToolID, BindingID: c.BindingID, UserID: c.UserID, Kind: kind,
	})
	tok.Header["kid"] = key.ID
	signed, err := tok.SignedString(key.Secret)
	if err != nil {
		return "", fmt.Errorf("session: sign: %w", err)
	}
	return signed, nil
}

// replaces reports whether r is the session in renews: on the same step,
// the same user's, or, for a session with no user (an MCP app's, minted
// with an agent token), one minted with the same token.
func (in MintInput) replaces(r models.AppSession) bool {
	if in.Replaces == "" || r.ID != in.Replaces || r.StepID != in.StepID {
		return false
	}
	if in.UserID != "" {
		return r.UserID != nil && *r.UserID == in.UserID
	}
	return r.UserID == nil && in.TokenID != "" && r.TokenID != nil && *r.TokenID == in.TokenID
}

func (in MintInput) validate() error {
	for _, f := range []struct{ name, value string }{
		{"workspace_id", in.WorkspaceID}, {"task_id", in.TaskID}, {"agent_id", in.AgentID},
		{"step_id", in.StepID}, {"configured_tool_id", in.ConfiguredToolID}, {"binding_id", in.BindingID},
	} {
		if !models.IsID(f.value) {
			return apperr.Invalidf("session %s must be a UUID, got %q", f.name, f.value)
		}
	}
	if in.UserID != "" && !models.IsID(in.UserID) {
		return apperr.Invalidf("session user_id must be a UUID, got %q", in.UserID)
	}
	if in.TokenID != "" && !models.IsID(in.TokenID) {
		return apperr.Invalidf("session token_id must be a UUID, got %q", in.TokenID)
	}
	return nil
}

// Verify checks a session token strictly — HS256 only, a kid of the ring,
// exp/nbf/iat/iss/aud present and valid within Leeway, every id claim a UUID
// — and then that it has not been revoked. Every refusal is a 401 with a
// short reason; none reveals key material.
func (i *Issuer) Verify(ctx context.Context, token string) (Claims, error) {
	c, err := i.VerifyShared(ctx, token)
	if err != nil {
		return Claims{}, err
	}
	return *c, nil
}

// VerifyShared is Verify returning the claims the issuer keeps for the
// token among those it has verified, not a copy: the runtime verbs keep them
// in a request's locals without an allocation per request. The caller must
// never modify them.
func (i *Issuer) VerifyShared(ctx context.Context, token string) (*Claims, error) {
	if token == "" {
		return nil, apperr.Unauthenticatedf("session token required")
	}
	c, err := i.verifyToken(token)
	if err != nil {
		return nil, err
	}
	if _, revoked := i.revoked.Load(c.SessionID); revoked {
		return nil, apperr.Unauthenticatedf("session token revoked")
	}
	return c, nil
}

// verifyToken parses token, or finds it among the tokens already verified.
// A cached token is still checked for expiry: it stays valid exactly as long
// as a full parse would accept it.
func (i *Issuer) verifyToken(token string) (*Claims, error) {
	if v, ok := i.verified.Load(token); ok {
		c := v.(*Claims)
		if i.now().Before(c.ExpiresAt.Add(Leeway)) {
			return c, nil
		}
		i.verified.Delete(token)
		i.cached.Add(-1)
	}
	var tc tokenClaims
	parsed, err := i.parser.ParseWithClaims(token, &tc, i.keyFor)
	if err != nil {
		return nil, refusal(parsed, err)
	}
	c, err := tc.claims()
	if err != nil {
		return nil, err
	}
	if i.cached.Add(1) > maxCachedTokens {
		i.verified.Clear()
		i.cached.Store(1)
	}
	// The cache outlives the request, and the caller's string may share
	// memory with a request buffer the server reuses (Fiber's headers do):
	// keep a copy, or the key would change under the map.
	i.verified.Store(strings.Clone(token), &c)
	return &c, nil
}

// Reasons the key lookup gives; refusal turns them into messages.
var (
	errKidMissing = errors.New("kid missing")
	errKidUnknown = errors.New("kid unknown")
)

// keyFor returns the ring's secret for the token's kid. The parser has
// already refused any algorithm but HS256 before this runs.
func (i *Issuer) keyFor(t *jwt.Token) (any, error) {
	kid, _ := t.Header["kid"].(string)
	if kid == "" {
		return nil, errKidMissing
	}
	secret, ok := i.ring.secret(kid)
	if !ok {
		return nil, errKidUnknown
	}
	return secret, nil
}

// refusal maps a parser error to the 401 the caller sees. Several claim
// failures can come together; the order puts the most useful one first.
func refusal(t *jwt.Token, err error) error {
	msg := "session token invalid"
	switch {
	case errors.Is(err, jwt.ErrTokenMalformed):
		msg = "session token malformed"
	case t != nil && (t.Method == nil || t.Method.Alg() != signingMethod.Alg()):
		msg = "session token algorithm not accepted"
	case errors.Is(err, errKidMissing):
		msg = "session token has no key id"
	case errors.Is(err, errKidUnknown):
		msg = "session token key id unknown"
	case errors.Is(err, jwt.ErrTokenSignatureInvalid):
		msg = "session token signature invalid"
	case errors.Is(err, jwt.ErrTokenRequiredClaimMissing):
		msg = "session token lacks a required claim"
	case errors.Is(err, jwt.ErrTokenExpired):
		msg = "session token expired"
	case errors.Is(err, jwt.ErrTokenNotValidYet), errors.Is(err, jwt.ErrTokenUsedBeforeIssued):
		msg = "session token not valid yet"
	case errors.Is(err, jwt.ErrTokenInvalidAudience):
		msg = "session token audience invalid"
	case errors.Is(err, jwt.ErrTokenInvalidIssuer):
		msg = "session token issuer invalid"
	}
	return apperr.Wrap(err, apperr.Unauthenticated, "%s", msg)
}

// claims checks the claims the parser does not know about and converts them.
func (tc tokenClaims) claims() (Claims, error) {
	incomplete := apperr.Unauthenticatedf("session token claims incomplete")
	ids, absent, lifetime, kind := []string{tc.ID, tc.WorkspaceID, tc.TaskID, tc.AgentID, tc.StepID, tc.ConfiguredToolID, tc.BindingID}, []string{}, TTL, KindTask
	switch tc.Kind {
	case "":
	case KindPreview:
		// A preview is on no task: it names its binding and nothing of a task.
		ids = []string{tc.ID, tc.WorkspaceID, tc.BindingID}
		absent = []string{tc.TaskID, tc.AgentID, tc.StepID, tc.ConfiguredToolID}
		lifetime, kind = PreviewTTL, KindPreview
	default:
		return Claims{}, incomplete
	}
	for _, id := range ids {
		if !models.IsID(id) {
			return Claims{}, incomplete
		}
	}
	for _, v := range absent {
		if v != "" {
			return Claims{}, incomplete
		}
	}
	if tc.UserID != "" && !models.IsID(tc.UserID) {
		return Claims{}, incomplete
	}
	if tc.IssuedAt == nil {
		return Claims{}, apperr.Unauthenticatedf("session token lacks a required claim")
	}
	// The parser has checked that exp and nbf are present.
	if tc.ExpiresAt.Sub(tc.IssuedAt.Time) > lifetime {
		return Claims{}, apperr.Unauthenticatedf("session token lifetime too long")
	}
	return Claims{
		SessionID:        tc.ID,
		WorkspaceID:      tc.WorkspaceID,
		TaskID:           tc.TaskID,
		AgentID:          tc.AgentID,
		StepID:           tc.StepID,
		ConfiguredToolID: tc.ConfiguredToolID,
		BindingID:        tc.BindingID,
		UserID:           tc.UserID,
		ExpiresAt:        tc.ExpiresAt.UTC(),
		Kind:             kind,
	}, nil
}

// Revoke ends a session at once on every replica: it stamps
// app_sessions.revoked_at and tells every replica, which refuse the token
// from their next call on. Revoking twice is harmless.
func (i *Issuer) Revoke(ctx context.Context, sessionID string) error {
	if !models.IsID(sessionID) {
		return apperr.Invalidf("session id must be a UUID, got %q", sessionID)
	}
	return i.db.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		var row models.AppSession
		err := tx.Clauses(clause.Locking{Strength: "UPDATE"}).Where("id = ?", sessionID).Take(&row).Error
		if err := store.NotFound(err, "session: find session", "session "+sessionID); err != nil {
			return err
		}
		return i.revokeRows(ctx, tx, []models.AppSession{row}, time.Now().UTC())
	})
}

// RevokeUserSessions ends, inside tx and on every replica before tx
// commits, every live session minted for userID: a user who is deleted
// stops acting through the sessions minted for them on their next call.
func (i *Issuer) RevokeUserSessions(ctx context.Context, tx *gorm.DB, userID string) error {
	return i.revokeLive(ctx, tx, "user_id = ?", userID)
}

// RevokeTokenSessions ends, inside tx and on every replica before tx
// commits, every live session minted with the host token tokenID: revoking
// a host token ends what it opened.
func (i *Issuer) RevokeTokenSessions(ctx context.Context, tx *gorm.DB, tokenID string) error {
	return i.revokeLive(ctx, tx, "token_id = ?", tokenID)
}

// revokeLive revokes the live sessions matching where (revoked ones are
// already refused, expired ones by their expiry).
func (i *Issuer) revokeLive(ctx context.Context, tx *gorm.DB, where string, arg string) error {
	now := time.Now().UTC()
	var live []models.AppSession
	err := tx.WithContext(ctx).Clauses(clause.Locking{Strength: "UPDATE"}).
		Where(where, arg).Where("revoked_at IS NULL AND expires_at > ?", now.Add(-Leeway)).
		Find(&live).Error
	if err != nil {
		return fmt.Errorf("session: list live sessions: %w", err)
	}
	if len(live) == 0 {
		return nil
	}
	return i.revokeRows(ctx, tx, live, now)
}

// revokeRows stamps rows revoked (keeping an earlier stamp) and announces
// them to every replica, this one included. It runs inside tx and before the
// commit: should the announcement fail, the transaction rolls back, so a row
// is never revoked where a replica would still accept its token; should the
// commit fail after, the token is refused early, which is safe.
func (i *Issuer) revokeRows(ctx context.Context, tx *gorm.DB, rows []models.AppSession, now time.Time) error {
	ids := make([]string, len(rows))
	for n, r := range rows {
		ids[n] = r.ID
	}
	if err := tx.Model(&models.AppSession{}).Where("id IN ? AND revoked_at IS NULL", ids).
		Update("revoked_at", now).Error; err != nil {
		return fmt.Errorf("session: revoke: %w", err)
	}
	for _, r := range rows {
		payload := r.ID + " " + strconv.FormatInt(r.ExpiresAt.Unix(), 10)
		exp, fresh := i.markRevoked(r.ID, r.ExpiresAt.Unix())
		if err := i.broadcast.Publish(ctx, payload, revokeWait); err != nil {
			// Unannounced, the transaction rolls back and the session lives
			// on: it must not stay refused on this replica alone until it
			// expires. (Should the announcement have reached Redis after
			// all, this replica hears it like every other and refuses it
			// with them.)
			if fresh {
				i.revoked.CompareAndDelete(r.ID, exp)
			}
			return fmt.Errorf("session: announce revocation: %w", err)
		}
	}
	return nil
}

// markRevoked puts id in the local set until the expiry secs (unix) and
// reports the value stored and whether id was new there.
func (i *Issuer) markRevoked(id string, secs int64) (time.Time, bool) {
	exp := time.Unix(secs, 0)
	_, loaded := i.revoked.LoadOrStore(id, exp)
	if i.revokeOps.Add(1)%1024 == 0 {
		i.pruneRevoked()
	}
	return exp, !loaded
}

// applyRevocation records "<session id> <expiry unix>" in the local set.
func (i *Issuer) applyRevocation(payload string) {
	id, exp, ok := strings.Cut(payload, " ")
	secs, err := strconv.ParseInt(exp, 10, 64)
	if !ok || err != nil {
		return
	}
	i.markRevoked(id, secs)
}

// resyncRevocations rebuilds the local set from the database: the sessions
// revoked and not yet expired. It runs on every (re)subscription, because
// revocations announced while this replica was disconnected were missed.
func (i *Issuer) resyncRevocations(ctx context.Context) error {
	var rows []models.AppSession
	err := i.db.WithContext(ctx).Select("id", "expires_at").
		Where("revoked_at IS NOT NULL AND expires_at > ?", i.now().UTC().Add(-Leeway)).Find(&rows).Error
	if err != nil {
		return fmt.Errorf("session: load revocations: %w", err)
	}
	for _, r := range rows {
		i.revoked.Store(r.ID, r.ExpiresAt)
	}
	i.pruneRevoked()
	return nil
}

// pruneRevoked forgets revocations of tokens that have expired anyway.
func (i *Issuer) pruneRevoked() {
	cutoff := i.now().Add(-Leeway)
	i.revoked.Range(func(k, v any) bool {
		if v.(time.Time).Before(cutoff) {
			i.revoked.Delete(k)
		}
		return true
	})
}

// CountLive returns the number of sessions neither expired nor revoked (the
// appruntime_live_sessions gauge).
func CountLive(ctx context.Context, db *gorm.DB) (int, error) {
	var n int64
	err := db.WithContext(ctx).Model(&models.AppSession{}).
		Where("revoked_at IS NULL AND expires_at > ?", time.Now().UTC()).Count(&n).Error
	if err != nil {
		return 0, fmt.Errorf("session: count live: %w", err)
	}
	return int(n), nil
}
