package webhook

import (
	"crypto/rand"
	"crypto/subtle"
	"encoding/base64"
	"log/slog"
	"strings"

	"github.com/appruntime/appruntime/internal/apperr"
)

// SecretPrefix starts every secret's written form, as Standard Webhooks
// requires; it also makes a leaked secret easy to scan for.
const SecretPrefix = "whsec_"

// Key sizes of the Standard Webhooks specification: a key is 24 to 64 bytes;
// NewSecret draws 32.
const (
	MinSecretBytes = 24
	MaxSecretBytes = 64
	NewSecretBytes = 32
)

// Secret is one signing key. The zero Secret is "no secret" (IsZero).
type Secret struct {
	key []byte
}

// NewSecret returns a fresh random secret of NewSecretBytes.
func NewSecret() Secret {
	key := make([]byte, NewSecretBytes)
	// crypto/rand.Read never fails on the platforms Go supports (it panics
	// itself rather than return a short read).
	_, _ = rand.Read(key)
	return Secret{key: key}
}

// ParseSecret reads a secret in its written form, "whsec_" followed by the
// standard (padded) base64 of a 24 to 64 byte key: the form every Standard
// Webhooks library takes. Anything else is an apperr.Invalid naming the
// problem, never quoting the value.
func ParseSecret(s string) (Secret, error) {
	s = strings.TrimSpace(s)
	encoded, ok := strings.CutPrefix(s, SecretPrefix)
	if !ok {
		return Secret{}, apperr.Invalidf("a webhook secret starts with %q", SecretPrefix)
	}
	key, err := base64.StdEncoding.Strict().DecodeString(encoded)
	if err != nil {
		return Secret{}, apperr.Invalidf("a webhook secret is %q and the standard base64 of its key (with = padding)", SecretPrefix)
	}
	if len(key) < MinSecretBytes || len(key) > MaxSecretBytes {
		return Secret{}, apperr.Invalidf("a webhook secret's key is %d to %d bytes, got %d", MinSecretBytes, MaxSecretBytes, len(key))
	}
	return Secret{key: key}, nil
}

// FromLegacy returns the secret whose key is the bytes of a secret issued
// before Standard Webhooks: those signed X-Appruntime-Signature with the
// secret string's own bytes as the HMAC key, so the same key signs both
// headers during the switch-over, and the receiver's Standard Webhooks
// secret is "whsec_" + base64(old secret). Its String is that value. Legacy
// secrets can be longer than MaxSecretBytes (HMAC hashes such a key first,
// in every library alike); shorter than MinSecretBytes is refused.
func FromLegacy(old []byte) (Secret, error) {
	if len(old) < MinSecretBytes {
		return Secret{}, apperr.Invalidf("a legacy webhook secret is at least %d bytes, got %d", MinSecretBytes, len(old))
	}
	return Secret{key: append([]byte(nil), old...)}, nil
}

// String is the secret's written form, "whsec_" + base64(key); "" for the
// zero Secret. It is what a receiver configures, so only ever show it to the
// owner of the webhook, once.
func (s Secret) String() string {
	if s.IsZero() {
		return ""
	}
	return SecretPrefix + base64.StdEncoding.EncodeToString(s.key)
}

// LogValue keeps a secret out of structured logs: slog prints it redacted.
func (s Secret) LogValue() slog.Value { return slog.StringValue(SecretPrefix + "[redacted]") }

// Key returns a copy of the key bytes: the HMAC key of both the Standard
// Webhooks signature and, during the switch-over, the legacy
// X-Appruntime-Signature.
func (s Secret) Key() []byte { return append([]byte(nil), s.key...) }

// IsZero reports whether s is the zero Secret.
func (s Secret) IsZero() bool { return len(s.key) == 0 }

// Equal reports whether two secrets have the same key, in constant time.
func (s Secret) Equal(o Secret) bool {
	return len(s.key) == len(o.key) && subtle.ConstantTimeCompare(s.key, o.key) == 1
}
