package webhook

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// The legacy webhook headers, sent beside the Standard Webhooks ones for one
// transition release (docs/agent-platforms.md#webhooks-standard-webhooks).
// The signature is "v1=" and the hex HMAC-SHA256, under the key of the
// agent's current webhook secret (Secret.Key), of the timestamp, a dot and
// the raw body.
const (
	LegacyHeaderEventID   = "X-Appruntime-Event-Id"
	LegacyHeaderTimestamp = "X-Appruntime-Timestamp"
	LegacyHeaderSignature = "X-Appruntime-Signature"
	legacyScheme          = "v1="
)

// SignLegacy sets the three legacy headers of one delivery attempt of body
// on h, signed with the keyring's current secret at the same timestamp as
// the Standard Webhooks headers.
func (k Keyring) SignLegacy(h http.Header, id string, at time.Time, body []byte) {
	h.Set(LegacyHeaderEventID, id)
	h.Set(LegacyHeaderTimestamp, strconv.FormatInt(at.Unix(), 10))
	h.Set(LegacyHeaderSignature, LegacySignature(k.Current.Key(), at.Unix(), body))
}

// LegacySignature returns the X-Appruntime-Signature value of body sent at
// timestamp (unix seconds) under key.
func LegacySignature(key []byte, timestamp int64, body []byte) string {
	mac := hmac.New(sha256.New, key)
	mac.Write([]byte(strconv.FormatInt(timestamp, 10)))
	mac.Write([]byte("."))
	mac.Write(body)
	return legacyScheme + hex.EncodeToString(mac.Sum(nil))
}

// VerifyLegacy checks a delivery by its legacy headers: that one of the
// signatures in X-Appruntime-Signature (comma-separated, so a secret can be
// rotated) is LegacySignature(key, timestamp, body), and, when tolerance is
// positive, that X-Appruntime-Timestamp is within tolerance of now, which
// refuses replays of old deliveries. body must be the raw bytes received.
// A failure wraps ErrBadSignature.
func VerifyLegacy(key []byte, header http.Header, body []byte, tolerance time.Duration) error {
	ts, err := strconv.ParseInt(header.Get(LegacyHeaderTimestamp), 10, 64)
	if err != nil {
		return fmt.Errorf("%w: missing or malformed %s", ErrBadSignature, LegacyHeaderTimestamp)
	}
	if tolerance > 0 {
		if age := time.Since(time.Unix(ts, 0)); age > tolerance || age < -tolerance {
			return fmt.Errorf("%w: timestamp is %s away from now", ErrBadSignature, age.Round(time.Second))
		}
	}
	want := []byte(LegacySignature(key, ts, body))
	for _, sig := range strings.Split(header.Get(LegacyHeaderSignature), ",") {
		if hmac.Equal([]byte(strings.TrimSpace(sig)), want) {
			return nil
		}
	}
	return ErrBadSignature
}
