package webhook

import (
	"encoding/json"
	"fmt"
	"time"
)

// DefaultRotationOverlap is how long a rotated-out secret keeps signing
// deliveries beside its successor: a day lets a receiver deploy its new
// secret without dropping a delivery.
const DefaultRotationOverlap = 24 * time.Hour

// MaxRotationOverlap bounds the overlap: a secret that was rotated out
// because it leaked must stop signing within a week whatever was asked.
const MaxRotationOverlap = 7 * 24 * time.Hour

// Keyring is what one webhook endpoint's deliveries are signed with: the
// current secret and, until PreviousExpiresAt, the one it replaced. Its JSON
// form (MarshalJSON) carries the secrets themselves and is meant to be
// sealed at rest (internal/crypt), never shown.
type Keyring struct {
	// Current signs every delivery.
	Current Secret
	// Previous is the secret the last rotation replaced; it signs beside
	// Current while now is before PreviousExpiresAt, and is ignored after.
	Previous          Secret
	PreviousExpiresAt time.Time
}

// Rotate returns the keyring after replacing Current with next at now: the
// old current secret keeps signing for overlap (0 means it stops at once,
// for a leaked secret; at most MaxRotationOverlap). A secret the keyring
// still held as Previous is dropped: a delivery carries at most two
// signatures.
func (k Keyring) Rotate(next Secret, now time.Time, overlap time.Duration) (Keyring, error) {
	if next.IsZero() {
		return k, fmt.Errorf("webhook: rotate to an empty secret")
	}
	if overlap < 0 || overlap > MaxRotationOverlap {
		return k, fmt.Errorf("webhook: rotation overlap %s is outside 0 to %s", overlap, MaxRotationOverlap)
	}
	if k.Current.IsZero() || overlap == 0 {
		return Keyring{Current: next}, nil
	}
	return Keyring{Current: next, Previous: k.Current, PreviousExpiresAt: now.Add(overlap)}, nil
}

// Live returns the secrets that sign a delivery made at now: Current, then
// Previous while its overlap lasts.
func (k Keyring) Live(now time.Time) []Secret {
	if k.Current.IsZero() {
		return nil
	}
	if k.Previous.IsZero() || !now.Before(k.PreviousExpiresAt) {
		return []Secret{k.Current}
	}
	return []Secret{k.Current, k.Previous}
}

// keyringJSON is the stored form of a Keyring.
type keyringJSON struct {
	Current           string     `json:"current"`
	Previous          string     `json:"previous,omitempty"`
	PreviousExpiresAt *time.Time `json:"previous_expires_at,omitempty"`
}

// MarshalJSON writes the keyring with its secrets in their written form;
// seal the result before storing it.
func (k Keyring) MarshalJSON() ([]byte, error) {
	out := keyringJSON{Current: k.Current.String()}
	if !k.Previous.IsZero() {
		out.Previous = k.Previous.String()
		at := k.PreviousExpiresAt.UTC()
		out.PreviousExpiresAt = &at
	}
	return json.Marshal(out)
}

// UnmarshalJSON reads what MarshalJSON wrote. Its secrets are read with
// ParseSecret, or as legacy secrets (FromLegacy) when they are not in the
// written form, so a keyring can hold a secret issued before Standard
// Webhooks.
func (k *Keyring) UnmarshalJSON(b []byte) error {
	var in keyringJSON
	if err := json.Unmarshal(b, &in); err != nil {
		return fmt.Errorf("webhook: decode keyring: %w", err)
	}
	cur, err := parseStored(in.Current)
	if err != nil {
		return fmt.Errorf("webhook: keyring current secret: %w", err)
	}
	next := Keyring{Current: cur}
	if in.Previous != "" {
		if in.PreviousExpiresAt == nil {
			return fmt.Errorf("webhook: keyring has a previous secret without previous_expires_at")
		}
		if next.Previous, err = parseStored(in.Previous); err != nil {
			return fmt.Errorf("webhook: keyring previous secret: %w", err)
		}
		next.PreviousExpiresAt = *in.PreviousExpiresAt
	}
	*k = next
	return nil
}

// parseStored reads a stored secret: the written form, else a legacy one.
func parseStored(s string) (Secret, error) {
	if sec, err := ParseSecret(s); err == nil {
		return sec, nil
	}
	return FromLegacy([]byte(s))
}

// ParseStoredKeyring reads an endpoint's stored signing material (opened,
// not sealed): a keyring as MarshalJSON wrote it, or, for an endpoint whose
// secret was stored before keyrings, the bare secret string, which is a
// legacy secret (FromLegacy) unless it is in the written form.
func ParseStoredKeyring(b []byte) (Keyring, error) {
	if len(b) > 0 && b[0] == '{' {
		var k Keyring
		if err := json.Unmarshal(b, &k); err != nil {
			return Keyring{}, err
		}
		return k, nil
	}
	sec, err := parseStored(string(b))
	if err != nil {
		return Keyring{}, err
	}
	return Keyring{Current: sec}, nil
}
