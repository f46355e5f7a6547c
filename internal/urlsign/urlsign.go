// Package urlsign signs and checks the parameters of short-lived URLs whose
// signature is their only credential (managed-storage file URLs, app
// block asset URLs), so that a browser's <iframe> or <img> can load them.
package urlsign

import (
	"crypto/hkdf"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// ClockSkew is how far in the future an expiry may lie beyond a URL's
// lifetime, for replicas whose clocks disagree a little. A later expiry was
// not signed under this deployment's current rules and is refused.
const ClockSkew = time.Minute

// Errors of Check: a URL that was not signed here (altered, or a later
// expiry than the lifetime allows) and one whose time is up.
var (
	ErrInvalid = errors.New("urlsign: not signed here")
	ErrExpired = errors.New("urlsign: expired")
)

// Signer signs and checks URLs of one purpose, with a key derived for
// that purpose only.
type Signer struct {
	key      []byte
	lifetime time.Duration
}

// New returns a Signer whose key is derived from secretsKey (at least 32
// bytes) with HKDF-SHA256 under label, for URLs that live lifetime.
func New(secretsKey []byte, label string, lifetime time.Duration) (*Signer, error) {
	if len(secretsKey) < 32 {
		return nil, errors.New("urlsign: SECRETS_KEY is required (at least 32 bytes) to sign URLs")
	}
	key, err := hkdf.Key(sha256.New, secretsKey, nil, label, 32)
	if err != nil {
		return nil, fmt.Errorf("urlsign: derive the key: %w", err)
	}
	return &Signer{key: key, lifetime: lifetime}, nil
}

// Lifetime is how long a URL signed now works.
func (s *Signer) Lifetime() time.Duration { return s.lifetime }

// Expiry is the expiry of a URL signed at now, to the second.
func (s *Signer) Expiry(now time.Time) time.Time {
	return now.Add(s.lifetime).Truncate(time.Second)
}

// Sign is the signature (base64url, no padding) of parts until exp (unix
// seconds). Parts must not contain a newline.
func (s *Signer) Sign(exp int64, parts ...string) string {
	mac := hmac.New(sha256.New, s.key)
	fmt.Fprintf(mac, "v1\n%s\n%d", strings.Join(parts, "\n"), exp)
	return base64.RawURLEncoding.EncodeToString(mac.Sum(nil))
}

// Check verifies sig over parts and the expiry exp (unix seconds, as sent)
// at now: ErrInvalid for a signature that does not match, an expiry that
// is not a canonical number or lies too far ahead, ErrExpired once now has
// reached it. It returns the parsed expiry.
func (s *Signer) Check(sig, exp string, now time.Time, parts ...string) (int64, error) {
	at, err := strconv.ParseInt(exp, 10, 64)
	if err != nil || strconv.FormatInt(at, 10) != exp || sig == "" {
		return 0, ErrInvalid
	}
	if !hmac.Equal([]byte(sig), []byte(s.Sign(at, parts...))) {
		return 0, ErrInvalid
	}
	if time.Unix(at, 0).After(now.Add(s.lifetime + ClockSkew)) {
		return 0, ErrInvalid
	}
	if now.Unix() >= at {
		return at, ErrExpired
	}
	return at, nil
}
