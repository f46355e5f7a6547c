package agenttool

import (
	"crypto/ed25519"
	"crypto/hkdf"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"github.com/appruntime/appruntime/internal/apperr"
	"github.com/appruntime/appruntime/internal/config"
)

// IdentityTTL is how long an identity token lives: long enough for one
// request and its retries, short enough that a leaked one is soon useless.
const IdentityTTL = 5 * time.Minute

// IdentityLeeway is the clock skew VerifyIdentity tolerates.
const IdentityLeeway = 30 * time.Second

// identityKeyInfo separates the identity keys from every other use of the
// same secret: an identity key is HKDF-SHA256(secret, info) used as an
// Ed25519 seed. So a deployment may build its identity ring from its
// SESSION_KEYS (the components see only public keys, and an Ed25519 public
// key says nothing of the HMAC secret it was derived from), or from keys of
// their own.
const identityKeyInfo = "appruntime agent-tool identity token / Ed25519 seed / v1"

// identityMethod is the one algorithm identity tokens are signed with.
var identityMethod = jwt.SigningMethodEdDSA

// IdentityClaims is who an app target's request is made for (seed 003:
// "identifying the user + install"). In appruntime terms the install is the
// agent in its workspace; the user is the person whose click ran a
// pending-input button, empty for a call the agent made itself.
type IdentityClaims struct {
	WorkspaceID string `json:"workspace_id"`
	AgentID     string `json:"agent_id"`
	TaskID      string `json:"task_id"`
	ToolCallID  string `json:"tool_call_id,omitempty"`
	Tool        string `json:"tool,omitempty"`
	UserID      string `json:"user_id,omitempty"`
}

// identityToken is the JWT payload: registered claims (iss, sub, aud = the
// component's integration id, exp, nbf, iat, jti) and IdentityClaims.
type identityToken struct {
	jwt.RegisteredClaims
	IdentityClaims
}

// identityKey is one key of the ring.
type identityKey struct {
	id   string
	priv ed25519.PrivateKey
}

// IdentitySigner mints identity tokens with the first key of its ring and
// publishes every key's public half as a JWKS, so a component verifies a
// token minted before a rotation. It is safe for concurrent use.
type IdentitySigner struct {
	keys   []identityKey
	issuer string
	now    func() time.Time
}

// NewIdentitySigner derives one Ed25519 key per entry of keys (a
// config.Key ring: "kid:base64secret,…", the first signs) and signs with
// issuer as iss. An empty ring is allowed: Mint then answers 501.
func NewIdentitySigner(keys []config.Key, issuer string) (*IdentitySigner, error) {
	if issuer == "" {
		return nil, errors.New("agenttool: an identity issuer is required")
	}
	s := &IdentitySigner{issuer: issuer, now: time.Now}
	seen := map[string]bool{}
	for i, k := range keys {
		switch {
		case k.ID == "":
			return nil, fmt.Errorf("agenttool: identity key %d has no id", i)
		case len(k.Secret) < config.MinKeyBytes:
			return nil, fmt.Errorf("agenttool: identity key %q is %d bytes, want at least %d", k.ID, len(k.Secret), config.MinKeyBytes)
		case seen[k.ID]:
			return nil, fmt.Errorf("agenttool: identity key id %q appears twice", k.ID)
		}
		seen[k.ID] = true
		seed, err := hkdf.Key(sha256.New, k.Secret, nil, identityKeyInfo, ed25519.SeedSize)
		if err != nil {
			return nil, fmt.Errorf("agenttool: derive identity key %q: %w", k.ID, err)
		}
		s.keys = append(s.keys, identityKey{id: k.ID, priv: ed25519.NewKeyFromSeed(seed)})
	}
	return s, nil
}

// Issuer is the iss of the tokens s mints.
func (s *IdentitySigner) Issuer() string { return s.issuer }

// Mint returns a token for claims, addressed to the component whose
// integration id is audience, valid for IdentityTTL.
func (s *IdentitySigner) Mint(audience string, c IdentityClaims) (string, error) {
	if len(s.keys) == 0 {
		return "", apperr.NotImplementedf("identity keys are not configured on this deployment, so app targets cannot be called")
	}
	if audience == "" || c.WorkspaceID == "" || c.AgentID == "" || c.TaskID == "" {
		return "", apperr.New(apperr.Internal, "agenttool: an identity token needs an audience, a workspace, an agent and a task")
	}
	now := s.now().UTC().Truncate(time.Second)
	sub := "agent:" + c.AgentID
	if c.UserID != "" {
		sub = "user:" + c.UserID
	}
	jti := make([]byte, 16)
	if _, err := rand.Read(jti); err != nil {
		return "", fmt.Errorf("agenttool: token id: %w", err)
	}
	tok := jwt.NewWithClaims(identityMethod, identityToken{
		RegisteredClaims: jwt.RegisteredClaims{
			Issuer:    s.issuer,
			Subject:   sub,
			Audience:  jwt.ClaimStrings{audience},
			ExpiresAt: jwt.NewNumericDate(now.Add(IdentityTTL)),
			NotBefore: jwt.NewNumericDate(now),
			IssuedAt:  jwt.NewNumericDate(now),
			ID:        hex.EncodeToString(jti),
		},
		IdentityClaims: c,
	})
	key := s.keys[0]
	tok.Header["kid"] = key.id
	signed, err := tok.SignedString(key.priv)
	if err != nil {
		return "", fmt.Errorf("agenttool: sign identity token: %w", err)
	}
	return signed, nil
}

// JWKS is a JSON Web Key Set (RFC 7517): what /.well-known/jwks.json serves.
type JWKS struct {
	Keys []JWK `json:"keys"`
}

// JWK is one Ed25519 public key (RFC 8037).
type JWK struct {
	Kty string `json:"kty"` // "OKP"
	Crv string `json:"crv"` // "Ed25519"
	X   string `json:"x"`   // the public key, base64url without padding
	Kid string `json:"kid"`
	Use string `json:"use"` // "sig"
	Alg string `json:"alg"` // "EdDSA"
}

// JWKS returns the public keys of the ring, the signing key first.
func (s *IdentitySigner) JWKS() JWKS {
	set := JWKS{Keys: make([]JWK, 0, len(s.keys))}
	for _, k := range s.keys {
		set.Keys = append(set.Keys, JWK{
			Kty: "OKP", Crv: "Ed25519", Kid: k.id, Use: "sig", Alg: identityMethod.Alg(),
			X: base64.RawURLEncoding.EncodeToString(k.priv.Public().(ed25519.PublicKey)),
		})
	}
	return set
}

// VerifyIdentity checks a token as a component should: EdDSA only, signed
// by the key of set its kid names, iss issuer, aud audience, exp, nbf and
// iat present and current within IdentityLeeway. It is what a Go component
// (and this package's tests) use; components in other languages do the
// same with their JOSE library.
func VerifyIdentity(token string, set JWKS, issuer, audience string) (IdentityClaims, error) {
	parser := jwt.NewParser(
		jwt.WithValidMethods([]string{identityMethod.Alg()}),
		jwt.WithExpirationRequired(),
		jwt.WithNotBeforeRequired(),
		jwt.WithIssuedAt(),
		jwt.WithIssuer(issuer),
		jwt.WithAudience(audience),
		jwt.WithLeeway(IdentityLeeway),
		jwt.WithStrictDecoding(),
	)
	var claims identityToken
	_, err := parser.ParseWithClaims(token, &claims, func(t *jwt.Token) (any, error) {
		kid, _ := t.Header["kid"].(string)
		for _, k := range set.Keys {
			if k.Kid != kid || k.Kty != "OKP" || k.Crv != "Ed25519" {
				continue
			}
			pub, err := base64.RawURLEncoding.DecodeString(k.X)
			if err != nil || len(pub) != ed25519.PublicKeySize {
				return nil, fmt.Errorf("key %q is not an Ed25519 public key", kid)
			}
			return ed25519.PublicKey(pub), nil
		}
		return nil, fmt.Errorf("no key %q in the set", kid)
	})
	if err != nil {
		return IdentityClaims{}, apperr.Wrap(err, apperr.Unauthenticated, "the identity token is not valid")
	}
	return claims.IdentityClaims, nil
}
