package session

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"github.com/redis/go-redis/v9"
	"gorm.io/gorm"
	"gorm.io/gorm/clause"

	"github.com/appruntime/appruntime/internal/apperr"
	"github.com/appruntime/appruntime/internal/config"
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
// once; a third stops the oldest", ARCHITECTURE.md decision 4).
const MaxLiveSessionsPerTask = 2

// signingMethod is the one algorithm sessions are signed and verified with;
// the parser refuses every other, "none" included.
var signingMethod = jwt.SigningMethodHS256

// Issuer mints, verifies and revokes session tokens. It is safe for
// concurrent use; every API replica builds one over the same database and
// Redis, so a revocation on one is refused by all.
type Issuer struct {
	db        *gorm.DB
	redis     *redis.Client
	keyPrefix string
	ring      *KeyRing
	issuer    string
	parser    *jwt.Parser
}

// IssuerOptions are what an Issuer is built from.
type IssuerOptions struct {
	Store     *store.Store
	Redis     *redis.Client
	KeyPrefix string       // starts the denylist keys: <KeyPrefix>session:revoked:<jti>
	Keys      []config.Key // config.Config.SessionKeys: the first signs, all verify
	Issuer    string       // config.Config.SessionIssuer: the iss minted and required
}

// NewIssuer builds an Issuer. An empty key ring is allowed (see NewKeyRing).
func NewIssuer(o IssuerOptions) (*Issuer, error) {
	ring, err := NewKeyRing(o.Keys)
	if err != nil {
		return nil, err
	}
	if o.Issuer == "" {
		return nil, fmt.Errorf("session: an issuer name is required")
	}
	return &Issuer{
		db:        o.Store.DB,
		redis:     o.Redis,
		keyPrefix: o.KeyPrefix,
		ring:      ring,
		issuer:    o.Issuer,
		parser: jwt.NewParser(
			jwt.WithValidMethods([]string{signingMethod.Alg()}),
			jwt.WithExpirationRequired(),
			jwt.WithNotBeforeRequired(),
			jwt.WithIssuedAt(),
			jwt.WithIssuer(o.Issuer),
			jwt.WithAudience(Audience),
			jwt.WithLeeway(Leeway),
			jwt.WithStrictDecoding(),
		),
	}, nil
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
}

// Mint issues a TTL-long session token for in and records it in
// app_sessions. When the task already has MaxLiveSessionsPerTask live
// sessions, the oldest are revoked in the same transaction and put on the
// denylist before it commits, so a failure never leaves three live.
func (i *Issuer) Mint(ctx context.Context, in MintInput) (string, Claims, error) {
	key, ok := i.ring.signingKey()
	if !ok {
		return "", Claims{}, apperr.NotImplementedf("session keys are not configured on this deployment")
	}
	if err := in.validate(); err != nil {
		return "", Claims{}, err
	}
	now := time.Now().UTC().Truncate(time.Second) // JWT times are whole seconds
	c := Claims{
		SessionID:        models.NewID(),
		WorkspaceID:      in.WorkspaceID,
		TaskID:           in.TaskID,
		AgentID:          in.AgentID,
		StepID:           in.StepID,
		ConfiguredToolID: in.ConfiguredToolID,
		BindingID:        in.BindingID,
		UserID:           in.UserID,
		ExpiresAt:        now.Add(TTL),
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
		ConfiguredToolID: c.ConfiguredToolID, BindingID: c.BindingID, UserID: c.UserID,
	})
	tok.Header["kid"] = key.ID
	signed, err := tok.SignedString(key.Secret)
	if err != nil {
		return "", Claims{}, fmt.Errorf("session: sign: %w", err)
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
		var live []models.AppSession
		if err := tx.Where("task_id = ? AND revoked_at IS NULL AND expires_at > ?", in.TaskID, now).
			Order("created_at, id").Find(&live).Error; err != nil {
			return fmt.Errorf("session: list live sessions: %w", err)
		}
		if excess := len(live) - (MaxLiveSessionsPerTask - 1); excess > 0 {
			if err := i.revokeRows(ctx, tx, live[:excess], now); err != nil {
				return err
			}
		}
		row := models.AppSession{
			ID: c.SessionID, WorkspaceID: c.WorkspaceID, TaskID: c.TaskID, StepID: c.StepID,
			ExpiresAt: c.ExpiresAt, CreatedAt: time.Now().UTC(),
		}
		if c.UserID != "" {
			row.UserID = &c.UserID
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
	return nil
}

// Verify checks a session token strictly — HS256 only, a kid of the ring,
// exp/nbf/iat/iss/aud present and valid within Leeway, every id claim a UUID
// — and then that it has not been revoked. Every refusal is a 401 with a
// short reason; none reveals key material.
func (i *Issuer) Verify(ctx context.Context, token string) (Claims, error) {
	if token == "" {
		return Claims{}, apperr.Unauthenticatedf("session token required")
	}
	var tc tokenClaims
	parsed, err := i.parser.ParseWithClaims(token, &tc, i.keyFor)
	if err != nil {
		return Claims{}, refusal(parsed, err)
	}
	c, err := tc.claims()
	if err != nil {
		return Claims{}, err
	}
	revoked, err := i.redis.Exists(ctx, i.denyKey(c.SessionID)).Result()
	if err != nil {
		return Claims{}, apperr.Wrap(err, apperr.Unavailable, "session revocation check unavailable")
	}
	if revoked > 0 {
		return Claims{}, apperr.Unauthenticatedf("session token revoked")
	}
	return c, nil
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
	for _, id := range []string{tc.ID, tc.WorkspaceID, tc.TaskID, tc.AgentID, tc.StepID, tc.ConfiguredToolID, tc.BindingID} {
		if !models.IsID(id) {
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
	if tc.ExpiresAt.Sub(tc.IssuedAt.Time) > TTL {
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
	}, nil
}

// Revoke ends a session at once on every replica: it stamps
// app_sessions.revoked_at and puts the session id on the Redis denylist until
// the token would have expired anyway. Revoking twice is harmless.
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

// revokeRows stamps rows revoked (keeping an earlier stamp) and denylists
// their ids. It runs inside tx and before the commit: should Redis fail, the
// transaction rolls back, so a row is never revoked without its denylist
// entry; should the commit fail after, the token is refused early, which is safe.
func (i *Issuer) revokeRows(ctx context.Context, tx *gorm.DB, rows []models.AppSession, now time.Time) error {
	ids := make([]string, len(rows))
	for n, r := range rows {
		ids[n] = r.ID
	}
	if err := tx.Model(&models.AppSession{}).Where("id IN ? AND revoked_at IS NULL", ids).
		Update("revoked_at", now).Error; err != nil {
		return fmt.Errorf("session: revoke: %w", err)
	}
	pipe := i.redis.Pipeline()
	for _, r := range rows {
		// Outlive the token by the leeway a verifier still grants it.
		ttl := time.Until(r.ExpiresAt) + Leeway
		if ttl <= 0 {
			continue
		}
		pipe.Set(ctx, i.denyKey(r.ID), 1, ttl)
	}
	if _, err := pipe.Exec(ctx); err != nil && !errors.Is(err, redis.Nil) {
		return fmt.Errorf("session: denylist: %w", err)
	}
	return nil
}

// denyKey is the Redis key that marks session jti revoked.
func (i *Issuer) denyKey(jti string) string { return i.keyPrefix + "session:revoked:" + jti }
