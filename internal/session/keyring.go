package session

import (
	"fmt"

	"github.com/appruntime/appruntime/internal/config"
)

// KeyRing holds the session signing keys: the first signs new tokens, every
// key verifies, so a deployment rotates by prepending a new key, waiting one
// TTL, then dropping the old one. Each key's id travels in the JWT header
// (kid) so a verifier picks the key without trying them all.
type KeyRing struct {
	signing config.Key
	byID    map[string][]byte
}

// NewKeyRing builds a ring from keys (config.Config.SessionKeys). An empty
// ring is allowed, for processes that never mint or verify (a worker): it
// refuses every token and Mint reports that no key is configured.
func NewKeyRing(keys []config.Key) (*KeyRing, error) {
	r := &KeyRing{byID: make(map[string][]byte, len(keys))}
	for i, k := range keys {
		if k.ID == "" {
			return nil, fmt.Errorf("session: key %d has no id", i)
		}
		if len(k.Secret) < config.MinKeyBytes {
			return nil, fmt.Errorf("session: key %q is %d bytes, want at least %d", k.ID, len(k.Secret), config.MinKeyBytes)
		}
		if _, dup := r.byID[k.ID]; dup {
			return nil, fmt.Errorf("session: key id %q appears twice", k.ID)
		}
		r.byID[k.ID] = k.Secret
	}
	if len(keys) > 0 {
		r.signing = keys[0]
	}
	return r, nil
}

// secret returns the verification key named kid.
func (r *KeyRing) secret(kid string) ([]byte, bool) {
	s, ok := r.byID[kid]
	return s, ok
}

// signingKey returns the key new tokens are signed with.
func (r *KeyRing) signingKey() (config.Key, bool) {
	return r.signing, r.signing.ID != ""
}
