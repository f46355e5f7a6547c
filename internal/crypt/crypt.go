// Package crypt encrypts secrets at rest (integration credentials, webhook
// secrets) with AES-256-GCM under the deployment's SECRETS_KEY.
package crypt

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
)

// Box seals and opens secrets. The zero value is unusable; use New.
type Box struct{ aead cipher.AEAD }

// version prefixes every sealed value so the format can change later.
const version byte = 1

// New returns a Box for key (any length ≥ 32; it is hashed to 32 bytes).
func New(key []byte) (*Box, error) {
	if len(key) < 32 {
		return nil, errors.New("crypt: key shorter than 32 bytes")
	}
	k := sha256.Sum256(key)
	block, err := aes.NewCipher(k[:])
	if err != nil {
		return nil, fmt.Errorf("crypt: %w", err)
	}
	aead, err := cipher.NewGCM(block)
	if err != nil {
		return nil, fmt.Errorf("crypt: %w", err)
	}
	return &Box{aead: aead}, nil
}

// Seal encrypts plaintext; the result carries its own nonce.
func (b *Box) Seal(plaintext []byte) ([]byte, error) {
	nonce := make([]byte, b.aead.NonceSize())
	if _, err := rand.Read(nonce); err != nil {
		return nil, fmt.Errorf("crypt: nonce: %w", err)
	}
	out := append([]byte{version}, nonce...)
	return b.aead.Seal(out, nonce, plaintext, nil), nil
}

// Open decrypts what Seal produced. A nil or empty input opens to nil.
func (b *Box) Open(sealed []byte) ([]byte, error) {
	if len(sealed) == 0 {
		return nil, nil
	}
	ns := b.aead.NonceSize()
	if len(sealed) < 1+ns || sealed[0] != version {
		return nil, errors.New("crypt: not a sealed value")
	}
	pt, err := b.aead.Open(nil, sealed[1:1+ns], sealed[1+ns:], nil)
	if err != nil {
		return nil, errors.New("crypt: cannot open sealed value (wrong SECRETS_KEY?)")
	}
	return pt, nil
}

// SealJSON marshals v and seals it.
func (b *Box) SealJSON(v any) ([]byte, error) {
	raw, err := json.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("crypt: marshal: %w", err)
	}
	return b.Seal(raw)
}

// OpenJSON opens sealed and unmarshals it into v; empty input leaves v alone.
func (b *Box) OpenJSON(sealed []byte, v any) error {
	raw, err := b.Open(sealed)
	if err != nil || raw == nil {
		return err
	}
	return json.Unmarshal(raw, v)
}
