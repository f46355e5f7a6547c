package auth

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"golang.org/x/crypto/bcrypt"
	"gorm.io/gorm"

	"github.com/appruntime/appruntime/internal/apperr"
	"github.com/appruntime/appruntime/models"
)

// tokenPrefix marks appruntime tokens so that leaked ones are easy to scan for.
var tokenPrefix = map[string]string{
	models.ScopeHost:  "art_host_",
	models.ScopeAgent: "art_agent_",
	models.ScopeAdmin: "art_admin_",
}

// Principal is who a verified token speaks for.
type Principal struct {
	TokenID     string
	WorkspaceID string
	Scope       string
	UserID      string // host tokens
	AgentID     string // agent tokens
}

// HashToken returns the stored form of a token.
func HashToken(token string) string {
	sum := sha256.Sum256([]byte(token))
	return hex.EncodeToString(sum[:])
}

// NewTokenSecret returns a fresh random token string for scope.
func NewTokenSecret(scope string) string {
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		panic(fmt.Sprintf("auth: random: %v", err))
	}
	return tokenPrefix[scope] + base64.RawURLEncoding.EncodeToString(b)
}

// IssueToken stores a new token and returns its secret (shown once). Exactly
// one of userID (host) or agentID (agent) is set; admin tokens take neither.
func IssueToken(ctx context.Context, db *gorm.DB, workspaceID, scope, name string, userID, agentID *string) (models.APIToken, string, error) {
	if _, ok := tokenPrefix[scope]; !ok {
		return models.APIToken{}, "", apperr.Invalidf("scope must be host, agent or admin")
	}
	if scope == models.ScopeHost && userID == nil {
		return models.APIToken{}, "", apperr.Invalidf("a host token needs user_id")
	}
	if scope == models.ScopeAgent && agentID == nil {
		return models.APIToken{}, "", apperr.Invalidf("an agent token needs agent_id")
	}
	secret := NewTokenSecret(scope)
	tok, err := StoreToken(ctx, db, workspaceID, scope, name, secret, userID, agentID)
	return tok, secret, err
}

// StoreToken stores a token whose secret the caller chose (the dev seed uses
// it so that tokens survive a restart of the demo).
func StoreToken(ctx context.Context, db *gorm.DB, workspaceID, scope, name, secret string, userID, agentID *string) (models.APIToken, error) {
	tok := models.APIToken{
		ID: models.NewID(), WorkspaceID: workspaceID, Scope: scope, Name: name,
		TokenHash: HashToken(secret), UserID: userID, AgentID: agentID,
	}
	if err := db.WithContext(ctx).Create(&tok).Error; err != nil {
		return tok, fmt.Errorf("auth: store token: %w", err)
	}
	return tok, nil
}

// BearerToken extracts the token from an Authorization header value.
func BearerToken(header string) (string, bool) {
	scheme, token, ok := strings.Cut(strings.TrimSpace(header), " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return "", false
	}
	token = strings.TrimSpace(token)
	return token, token != ""
}

// LastUsedResolution is how fresh a token's last_used_at is kept: a use
// stamps it only when the stamp is older than this, so a token used on
// every request costs one write a minute, not one per request.
const LastUsedResolution = time.Minute

// Verify resolves a bearer token of the wanted scope. Unknown, revoked and
// wrong-scope tokens are all 401 with the same message, so a caller cannot
// probe which tokens exist. A token whose last_used_at is older than
// LastUsedResolution is stamped with the time of this use.
func Verify(ctx context.Context, db *gorm.DB, token, scope string) (Principal, error) {
	if !strings.HasPrefix(token, tokenPrefix[scope]) {
		return Principal{}, apperr.Unauthenticatedf("a valid %s token is required", scope)
	}
	tok, found, err := loadToken(ctx, db, HashToken(token))
	if err != nil {
		return Principal{}, err
	}
	if !found {
		return Principal{}, apperr.Unauthenticatedf("a valid %s token is required", scope)
	}
	return admit(ctx, db, tok, scope, time.Now().UTC())
}

// loadToken reads the live (unrevoked) token whose hash is hash; found is
// false when there is none.
func loadToken(ctx context.Context, db *gorm.DB, hash string) (tok models.APIToken, found bool, err error) {
	err = db.WithContext(ctx).Where("token_hash = ? AND revoked_at IS NULL", hash).Take(&tok).Error
	if errors.Is(err, gorm.ErrRecordNotFound) {
		return tok, false, nil
	}
	if err != nil {
		return tok, false, fmt.Errorf("auth: verify token: %w", err)
	}
	return tok, true, nil
}

// admit returns the principal of tok when its scope is scope, stamping its
// last use (at most every LastUsedResolution).
func admit(ctx context.Context, db *gorm.DB, tok models.APIToken, scope string, now time.Time) (Principal, error) {
	if tok.Scope != scope {
		return Principal{}, apperr.Unauthenticatedf("a valid %s token is required", scope)
	}
	if tok.LastUsedAt == nil || now.Sub(*tok.LastUsedAt) >= LastUsedResolution {
		if err := stampLastUsed(ctx, db, tok.ID, now); err != nil {
			return Principal{}, err
		}
	}
	return principalOf(tok), nil
}

// stampLastUsed sets a token's last_used_at to now unless another request
// has stamped it within LastUsedResolution meanwhile (requests that read
// the old stamp at the same moment change the row once).
func stampLastUsed(ctx context.Context, db *gorm.DB, tokenID string, now time.Time) error {
	err := db.WithContext(ctx).Model(&models.APIToken{}).
		Where("id = ? AND (last_used_at IS NULL OR last_used_at <= ?)", tokenID, now.Add(-LastUsedResolution)).
		Update("last_used_at", now).Error
	if err != nil {
		return fmt.Errorf("auth: stamp token use: %w", err)
	}
	return nil
}

// RevokeToken marks a token of the workspace revoked.
func RevokeToken(ctx context.Context, db *gorm.DB, workspaceID, tokenID string) error {
	res := db.WithContext(ctx).Model(&models.APIToken{}).
		Where("id = ? AND workspace_id = ? AND revoked_at IS NULL", tokenID, workspaceID).
		Update("revoked_at", time.Now().UTC())
	if res.Error != nil {
		return fmt.Errorf("auth: revoke token: %w", res.Error)
	}
	if res.RowsAffected == 0 {
		return apperr.NotFoundf("token not found")
	}
	return nil
}

// MinPasswordLength is the shortest password a user may have.
const MinPasswordLength = 8

// MaxPasswordBytes is the longest password bcrypt hashes: it reads no more
// than 72 bytes and refuses a longer one.
const MaxPasswordBytes = 72

// HashPassword returns the bcrypt hash of a password.
func HashPassword(password string) (string, error) {
	if len(password) < MinPasswordLength {
		return "", apperr.Invalidf("password must be at least %d characters", MinPasswordLength)
	}
	if len(password) > MaxPasswordBytes {
		return "", apperr.Invalidf("password must be at most %d bytes", MaxPasswordBytes)
	}
	h, err := bcrypt.GenerateFromPassword([]byte(password), bcrypt.DefaultCost)
	if err != nil {
		return "", fmt.Errorf("auth: hash password: %w", err)
	}
	return string(h), nil
}

// CheckPassword finds the user with email and password; any mismatch is the
// same 401. An email may belong to users of several workspaces: the
// password is checked against each, and when it is right for several, an
// admin is preferred, then the oldest account. An unknown email costs the
// same bcrypt comparison as a known one, so neither the reply nor its
// timing tells whether it exists.
func CheckPassword(ctx context.Context, db *gorm.DB, email, password string) (models.User, error) {
	var candidates []models.User
	err := db.WithContext(ctx).Where("lower(email) = lower(?)", strings.TrimSpace(email)).
		Order("created_at, id").Find(&candidates).Error
	if err != nil {
		return models.User{}, fmt.Errorf("auth: find user: %w", err)
	}
	if len(candidates) == 0 {
		_ = bcrypt.CompareHashAndPassword(unknownUserHash(), []byte(password))
		return models.User{}, apperr.Unauthenticatedf("wrong email or password")
	}
	var match *models.User
	for i, u := range candidates {
		if bcrypt.CompareHashAndPassword([]byte(u.PasswordHash), []byte(password)) != nil {
			continue
		}
		if match == nil || (match.Role != models.RoleAdmin && u.Role == models.RoleAdmin) {
			match = &candidates[i]
		}
	}
	if match == nil {
		return models.User{}, apperr.Unauthenticatedf("wrong email or password")
	}
	return *match, nil
}

// unknownUserHash is a bcrypt hash of a random password, compared against
// when no user has the email.
var unknownUserHash = sync.OnceValue(func() []byte {
	h, err := bcrypt.GenerateFromPassword([]byte(NewTokenSecret(models.ScopeAdmin)), bcrypt.DefaultCost)
	if err != nil {
		panic(fmt.Sprintf("auth: hash: %v", err))
	}
	return h
})

// Actor names the principal in audit entries and feed rows.
func (p Principal) Actor() string {
	if p.UserID != "" {
		return "user:" + p.UserID
	}
	return "token:" + p.TokenID
}
