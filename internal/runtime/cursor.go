package runtime

import (
	"bytes"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"

	"github.com/appruntime/appruntime/internal/apperr"
)

// cursorMACBytes is how much of a cursor's HMAC-SHA256 it carries: 128 bits
// is beyond guessing, and keeps the cursor short.
const cursorMACBytes = 16

// cursorKeyLabel separates the cursor key from other keys derived from the
// same secret.
const cursorKeyLabel = "appruntime read cursor v1"

// cursor is the opaque page cursor: the binding and op it pages and the
// offset of the next page. It is signed, so a bundle can only hand back an
// offset this API issued, for the op it was issued for.
type cursor struct {
	Binding string `json:"b"`
	Op      string `json:"op"`
	Offset  int    `json:"offset"`
}

// NewCursorKey derives the key that signs read cursors from the
// deployment's SECRETS_KEY, so that every replica accepts the others'
// cursors. Without a secret it returns a random key: cursors then hold
// within this process only.
func NewCursorKey(secret []byte) []byte {
	if len(secret) == 0 {
		key := make([]byte, sha256.Size)
		if _, err := rand.Read(key); err != nil {
			panic(err)
		}
		return key
	}
	m := hmac.New(sha256.New, secret)
	m.Write([]byte(cursorKeyLabel))
	return m.Sum(nil)
}

func cursorMAC(key, payload []byte) []byte {
	m := hmac.New(sha256.New, key)
	m.Write(payload)
	return m.Sum(nil)[:cursorMACBytes]
}

// encodeCursor returns c signed with key: base64url(json) "." base64url(mac).
func encodeCursor(key []byte, c cursor) string {
	raw, _ := json.Marshal(c)
	return base64.RawURLEncoding.EncodeToString(raw) + "." + base64.RawURLEncoding.EncodeToString(cursorMAC(key, raw))
}

// decodeCursor returns the offset of s, a cursor issued for op of binding
// bindingID; "" is the first page. Anything else is a 400.
func decodeCursor(key []byte, s, bindingID, op string) (int, error) {
	if s == "" {
		return 0, nil
	}
	notOurs := apperr.Invalidf("cursor is not one this API issued")
	body, sig, ok := bytes.Cut([]byte(s), []byte("."))
	if !ok {
		return 0, notOurs
	}
	raw, err := base64.RawURLEncoding.DecodeString(string(body))
	if err != nil {
		return 0, notOurs
	}
	mac, err := base64.RawURLEncoding.DecodeString(string(sig))
	if err != nil || !hmac.Equal(mac, cursorMAC(key, raw)) {
		return 0, notOurs
	}
	var c cursor
	if json.Unmarshal(raw, &c) != nil || c.Offset < 0 || c.Binding != bindingID {
		return 0, notOurs
	}
	if c.Op != op {
		return 0, apperr.Invalidf("cursor belongs to op %q, not %q", c.Op, op)
	}
	return c.Offset, nil
}
