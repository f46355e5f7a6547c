package webhook

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// The headers of a Standard Webhooks delivery.
const (
	HeaderID        = "webhook-id"
	HeaderTimestamp = "webhook-timestamp"
	HeaderSignature = "webhook-signature"
)

// signatureVersion prefixes each signature: v1 is HMAC-SHA256.
const signatureVersion = "v1"

// DefaultTolerance is how far a delivery's timestamp may be from the
// receiver's clock, the specification's five minutes: an older delivery is a
// replay and is refused.
const DefaultTolerance = 5 * time.Minute

// MaxIDLength bounds a message id; ours are UUIDs.
const MaxIDLength = 256

// ErrNoSecret is what signing with an empty keyring returns.
var ErrNoSecret = errors.New("webhook: no signing secret")

// ErrBadSignature is what Verify returns for a delivery that does not verify.
var ErrBadSignature = errors.New("webhook: signature does not verify")

// Sign sets the three Standard Webhooks headers of one delivery attempt of
// body on h: id is the event's id, the same on every attempt of one event;
// at is the attempt's time. Every secret live at that time signs (Live), so
// during a rotation's overlap the signature header carries two signatures
// separated by a space. body must be the exact bytes sent.
func (k Keyring) Sign(h http.Header, id string, at time.Time, body []byte) error {
	if err := checkID(id); err != nil {
		return err
	}
	live := k.Live(at)
	if len(live) == 0 {
		return ErrNoSecret
	}
	ts := strconv.FormatInt(at.Unix(), 10)
	sigs := make([]string, len(live))
	for i, s := range live {
		sigs[i] = signatureVersion + "," + s.signature(id, ts, body)
	}
	h.Set(HeaderID, id)
	h.Set(HeaderTimestamp, ts)
	h.Set(HeaderSignature, strings.Join(sigs, " "))
	return nil
}

// checkID refuses an id a receiver could not dedupe on, or one that would
// make the signed content ambiguous.
func checkID(id string) error {
	if id == "" || len(id) > MaxIDLength || strings.ContainsAny(id, ". \t\r\n,") {
		return fmt.Errorf("webhook: message id %q is empty, longer than %d bytes, or has a dot, comma or space", id, MaxIDLength)
	}
	return nil
}

// signature is base64(HMAC-SHA256(key, id "." ts "." body)).
func (s Secret) signature(id, ts string, body []byte) string {
	mac := hmac.New(sha256.New, s.key)
	mac.Write([]byte(id))
	mac.Write([]byte{'.'})
	mac.Write([]byte(ts))
	mac.Write([]byte{'.'})
	mac.Write(body)
	return base64.StdEncoding.EncodeToString(mac.Sum(nil))
}

// Verify checks a received delivery the way a Standard Webhooks library
// does: one of the space-separated v1 signatures of the header is s's
// signature of the id, timestamp and body, and the timestamp is within
// tolerance of now (tolerance ≤ 0 means DefaultTolerance). appruntime's own
// tests and receivers written in Go use it; any language's library will do.
func (s Secret) Verify(h http.Header, body []byte, now time.Time, tolerance time.Duration) error {
	if s.IsZero() {
		return ErrNoSecret
	}
	if tolerance <= 0 {
		tolerance = DefaultTolerance
	}
	id, ts, sigs := h.Get(HeaderID), h.Get(HeaderTimestamp), h.Get(HeaderSignature)
	if id == "" || ts == "" || sigs == "" {
		return fmt.Errorf("%w: missing %s, %s or %s", ErrBadSignature, HeaderID, HeaderTimestamp, HeaderSignature)
	}
	sec, err := strconv.ParseInt(ts, 10, 64)
	if err != nil {
		return fmt.Errorf("%w: malformed %s", ErrBadSignature, HeaderTimestamp)
	}
	if skew := now.Sub(time.Unix(sec, 0)); skew > tolerance || skew < -tolerance {
		return fmt.Errorf("%w: timestamp is %s away from now", ErrBadSignature, skew.Round(time.Second))
	}
	// Libraries sign the timestamp as they parsed it ("0042" is 42).
	want := []byte(s.signature(id, strconv.FormatInt(sec, 10), body))
	for _, versioned := range strings.Fields(sigs) {
		version, sig, ok := strings.Cut(versioned, ",")
		if ok && version == signatureVersion && hmac.Equal([]byte(sig), want) {
			return nil
		}
	}
	return ErrBadSignature
}
