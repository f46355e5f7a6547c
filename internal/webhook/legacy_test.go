package webhook_test

import (
	"errors"
	"net/http"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/appruntime/appruntime/internal/webhook"
)

// The legacy X-Appruntime-* signature verifies under its key, with any one
// of several signatures, and refuses a changed body, key or timestamp, an
// old delivery and a missing or unknown part.
func TestVerifyLegacy(t *testing.T) {
	t.Parallel()
	secret := []byte("legacy-secret")
	body := []byte(`{"id":"e1","type":"task.resumed"}`)
	now := time.Now().Unix()
	signed := func(ts int64, sig string) http.Header {
		h := http.Header{}
		h.Set(webhook.LegacyHeaderTimestamp, strconv.FormatInt(ts, 10))
		h.Set(webhook.LegacyHeaderSignature, sig)
		return h
	}
	require.NoError(t, webhook.VerifyLegacy(secret, signed(now, webhook.LegacySignature(secret, now, body)), body, time.Minute))
	require.NoError(t, webhook.VerifyLegacy(secret,
		signed(now, webhook.LegacySignature([]byte("old secret"), now, body)+", "+webhook.LegacySignature(secret, now, body)), body, time.Minute),
		"any one of several signatures verifies")
	for _, tc := range []struct {
		name   string
		header http.Header
		body   []byte
	}{
		{"tampered body", signed(now, webhook.LegacySignature(secret, now, body)), []byte(`{"id":"e2","type":"task.resumed"}`)},
		{"wrong secret", signed(now, webhook.LegacySignature([]byte("wrong"), now, body)), body},
		{"timestamp changed", signed(now+1, webhook.LegacySignature(secret, now, body)), body},
		{"too old", signed(now-3600, webhook.LegacySignature(secret, now-3600, body)), body},
		{"no timestamp", http.Header{webhook.LegacyHeaderSignature: {webhook.LegacySignature(secret, now, body)}}, body},
		{"no signature", signed(now, ""), body},
		{"unknown scheme", signed(now, "v0="+webhook.LegacySignature(secret, now, body)[3:]), body},
	} {
		err := webhook.VerifyLegacy(secret, tc.header, tc.body, 5*time.Minute)
		require.True(t, errors.Is(err, webhook.ErrBadSignature), "%s: %v", tc.name, err)
	}
}
