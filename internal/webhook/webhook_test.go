package webhook_test

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"log/slog"
	"net/http"
	"strings"
	"testing"
	"time"

	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"
	"github.com/stretchr/testify/require"

	"github.com/appruntime/appruntime/internal/apperr"
	"github.com/appruntime/appruntime/internal/webhook"
)

var body = []byte(`{"id":"evt_1","type":"task_resumed","task_id":"t1"}`)

// signed returns the headers of a delivery of body signed by k at at.
func signed(t *testing.T, k webhook.Keyring, id string, at time.Time, b []byte) http.Header {
	t.Helper()
	h := http.Header{}
	require.NoError(t, k.Sign(h, id, at, b))
	return h
}

// receiver is what an agent platform runs: the Standard Webhooks library
// configured with the written form of the secret.
func receiver(t *testing.T, s webhook.Secret) *standardwebhooks.Webhook {
	t.Helper()
	wh, err := standardwebhooks.NewWebhook(s.String())
	require.NoError(t, err)
	return wh
}

func TestTheStandardLibraryVerifiesADelivery(t *testing.T) {
	t.Parallel()
	secret := webhook.NewSecret()
	k := webhook.Keyring{Current: secret}
	now := time.Now()
	tests := []struct {
		name    string
		at      time.Time
		body    []byte
		wantErr error
	}{
		{"a fresh delivery", now, body, nil},
		{"four minutes old", now.Add(-4 * time.Minute), body, nil},
		{"a tampered body", now, bytes.Replace(body, []byte("t1"), []byte("t2"), 1), standardwebhooks.ErrNoMatchingSignature},
		{"a timestamp 10 minutes old", now.Add(-10 * time.Minute), body, standardwebhooks.ErrMessageTooOld},
		{"a timestamp 10 minutes ahead", now.Add(10 * time.Minute), body, standardwebhooks.ErrMessageTooNew},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			h := signed(t, k, "evt_1", tc.at, body)
			require.Equal(t, "evt_1", h.Get("webhook-id"))
			require.Regexp(t, `^v1,[A-Za-z0-9+/]{43}=$`, h.Get("webhook-signature"))
			err := receiver(t, secret).Verify(tc.body, h)
			if tc.wantErr == nil {
				require.NoError(t, err)
			} else {
				require.ErrorIs(t, err, tc.wantErr)
			}
			// Our own verifier agrees with the library on every case.
			ours := secret.Verify(h, tc.body, now, 0)
			require.Equal(t, tc.wantErr == nil, ours == nil, "webhook.Verify: %v", ours)
		})
	}
}

func TestAnotherSecretDoesNotVerify(t *testing.T) {
	t.Parallel()
	h := signed(t, webhook.Keyring{Current: webhook.NewSecret()}, "evt_1", time.Now(), body)
	require.ErrorIs(t, receiver(t, webhook.NewSecret()).Verify(body, h), standardwebhooks.ErrNoMatchingSignature)
}

func TestOurVerifierReadsWhatTheLibrarySigns(t *testing.T) {
	t.Parallel()
	secret := webhook.NewSecret()
	now := time.Unix(1_800_000_000, 0)
	sig, err := receiver(t, secret).Sign("msg_2", now, body)
	require.NoError(t, err)
	h := http.Header{}
	h.Set(webhook.HeaderID, "msg_2")
	h.Set(webhook.HeaderTimestamp, "1800000000")
	h.Set(webhook.HeaderSignature, "v2,bm9wZQ== "+sig) // an unknown version is skipped
	require.NoError(t, secret.Verify(h, body, now, 0))

	h.Set(webhook.HeaderSignature, "v2,"+strings.TrimPrefix(sig, "v1,"))
	require.ErrorIs(t, secret.Verify(h, body, now, 0), webhook.ErrBadSignature, "only v1 signatures count")
	h.Del(webhook.HeaderID)
	require.ErrorIs(t, secret.Verify(h, body, now, 0), webhook.ErrBadSignature)
}

func TestARotationSignsWithBothSecretsDuringTheOverlap(t *testing.T) {
	t.Parallel()
	oldSecret, newSecret := webhook.NewSecret(), webhook.NewSecret()
	rotatedAt := time.Now()
	k, err := webhook.Keyring{Current: oldSecret}.Rotate(newSecret, rotatedAt, time.Hour)
	require.NoError(t, err)
	require.True(t, k.Current.Equal(newSecret))
	require.True(t, k.Previous.Equal(oldSecret))

	during := signed(t, k, "evt_1", rotatedAt.Add(59*time.Minute), body)
	sigs := strings.Split(during.Get("webhook-signature"), " ")
	require.Len(t, sigs, 2, "two signatures, space-separated")
	require.True(t, strings.HasPrefix(sigs[0], "v1,") && strings.HasPrefix(sigs[1], "v1,"))
	for _, s := range []webhook.Secret{oldSecret, newSecret} {
		require.NoError(t, receiver(t, s).VerifyIgnoringTimestamp(body, during), "either secret verifies during the overlap")
	}

	after := signed(t, k, "evt_1", rotatedAt.Add(time.Hour), body)
	require.Len(t, strings.Split(after.Get("webhook-signature"), " "), 1, "the previous secret has expired")
	require.NoError(t, receiver(t, newSecret).VerifyIgnoringTimestamp(body, after))
	require.ErrorIs(t, receiver(t, oldSecret).VerifyIgnoringTimestamp(body, after), standardwebhooks.ErrNoMatchingSignature)
}

func TestRotate(t *testing.T) {
	t.Parallel()
	a, b, c := webhook.NewSecret(), webhook.NewSecret(), webhook.NewSecret()
	now := time.Unix(1_800_000_000, 0)

	k, err := webhook.Keyring{}.Rotate(a, now, time.Hour)
	require.NoError(t, err)
	require.True(t, k.Previous.IsZero(), "nothing to overlap with on a first secret")

	k, err = k.Rotate(b, now, time.Hour)
	require.NoError(t, err)
	k, err = k.Rotate(c, now.Add(time.Minute), time.Hour)
	require.NoError(t, err)
	require.Len(t, k.Live(now.Add(2*time.Minute)), 2, "at most two secrets sign")
	require.True(t, k.Previous.Equal(b), "a second rotation drops the oldest secret")
	require.Equal(t, now.Add(time.Minute+time.Hour), k.PreviousExpiresAt)

	leaked, err := k.Rotate(a, now, 0)
	require.NoError(t, err)
	require.Len(t, leaked.Live(now), 1, "overlap 0 retires the old secret at once")

	_, err = k.Rotate(webhook.Secret{}, now, time.Hour)
	require.Error(t, err)
	_, err = k.Rotate(a, now, webhook.MaxRotationOverlap+time.Second)
	require.Error(t, err)
	_, err = k.Rotate(a, now, -time.Second)
	require.Error(t, err)
}

func TestSignRefuses(t *testing.T) {
	t.Parallel()
	k := webhook.Keyring{Current: webhook.NewSecret()}
	for _, id := range []string{"", "a.b", "a b", "a,b", strings.Repeat("x", webhook.MaxIDLength+1)} {
		require.Error(t, k.Sign(http.Header{}, id, time.Now(), body), "id %q", id)
	}
	require.ErrorIs(t, webhook.Keyring{}.Sign(http.Header{}, "evt_1", time.Now(), body), webhook.ErrNoSecret)
}

func TestParseSecret(t *testing.T) {
	t.Parallel()
	key24 := base64.StdEncoding.EncodeToString(bytes.Repeat([]byte{7}, 24))
	tests := []struct {
		name, in string
		ok       bool
	}{
		{"the specification's example", "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw", true},
		{"24 bytes", "whsec_" + key24, true},
		{"64 bytes", "whsec_" + base64.StdEncoding.EncodeToString(make([]byte, 64)), true},
		{"surrounding space", "  whsec_" + key24 + "\n", true},
		{"no prefix", key24, false},
		{"another prefix", "whsk_" + key24, false},
		{"23 bytes", "whsec_" + base64.StdEncoding.EncodeToString(make([]byte, 23)), false},
		{"65 bytes", "whsec_" + base64.StdEncoding.EncodeToString(make([]byte, 65)), false},
		{"url-safe alphabet", "whsec_" + base64.URLEncoding.EncodeToString(bytes.Repeat([]byte{0xfb}, 32)), false},
		{"padding missing", "whsec_" + base64.RawStdEncoding.EncodeToString(make([]byte, 32)), false},
		{"not base64", "whsec_!!!!", false},
		{"empty", "", false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			s, err := webhook.ParseSecret(tc.in)
			if !tc.ok {
				require.Error(t, err)
				require.True(t, apperr.Is(err, apperr.Invalid), "a bad secret is a 400: %v", err)
				if v := strings.TrimSpace(strings.TrimPrefix(tc.in, "whsec_")); len(v) >= 8 {
					require.NotContains(t, err.Error(), v[:8], "the message never quotes the value")
				}
				return
			}
			require.NoError(t, err)
			require.Equal(t, strings.TrimSpace(tc.in), s.String(), "the written form round-trips")
			_, err = standardwebhooks.NewWebhook(s.String())
			require.NoError(t, err)
		})
	}
}

func TestNewSecretsAreDistinctAndWellFormed(t *testing.T) {
	t.Parallel()
	a, b := webhook.NewSecret(), webhook.NewSecret()
	require.False(t, a.Equal(b))
	require.Len(t, a.Key(), webhook.NewSecretBytes)
	parsed, err := webhook.ParseSecret(a.String())
	require.NoError(t, err)
	require.True(t, parsed.Equal(a))
}

// TestALegacySecretMigrates is the switch-over of docs/agent-platforms.md#webhooks-standard-webhooks: a
// secret issued before Standard Webhooks (whsec_ and raw url-safe base64,
// used as HMAC key byte for byte) becomes the Standard Webhooks secret
// "whsec_" + base64(old secret) on the receiver's side, with the same key.
func TestALegacySecretMigrates(t *testing.T) {
	t.Parallel()
	old := "whsec_" + base64.RawURLEncoding.EncodeToString(bytes.Repeat([]byte{0xfe, 0x01}, 16))
	_, err := webhook.ParseSecret(old)
	require.Error(t, err, "the old form is not a Standard Webhooks secret")

	s, err := webhook.FromLegacy([]byte(old))
	require.NoError(t, err)
	require.Equal(t, []byte(old), s.Key(), "the legacy header keeps its key")
	require.Equal(t, "whsec_"+base64.StdEncoding.EncodeToString([]byte(old)), s.String())

	h := signed(t, webhook.Keyring{Current: s}, "evt_9", time.Now(), body)
	require.NoError(t, receiver(t, s).Verify(body, h))

	_, err = webhook.FromLegacy([]byte("short"))
	require.Error(t, err)
}

func TestKeyringJSON(t *testing.T) {
	t.Parallel()
	legacy, err := webhook.FromLegacy([]byte("whsec_legacy-secret-that-is-long-enough"))
	require.NoError(t, err)
	rotatedAt := time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)
	k, err := webhook.Keyring{Current: legacy}.Rotate(webhook.NewSecret(), rotatedAt, time.Hour)
	require.NoError(t, err)

	b, err := json.Marshal(k)
	require.NoError(t, err)
	var back webhook.Keyring
	require.NoError(t, json.Unmarshal(b, &back))
	require.True(t, back.Current.Equal(k.Current))
	require.True(t, back.Previous.Equal(legacy), "a legacy secret survives the round trip with its key")
	require.True(t, back.PreviousExpiresAt.Equal(rotatedAt.Add(time.Hour)))

	single, err := json.Marshal(webhook.Keyring{Current: k.Current})
	require.NoError(t, err)
	require.NotContains(t, string(single), "previous")

	for _, bad := range []string{
		`{"current":""}`,
		`{"current":"` + k.Current.String() + `","previous":"` + k.Current.String() + `"}`,
		`[]`,
	} {
		require.Error(t, json.Unmarshal([]byte(bad), &back), bad)
	}
}

func TestSecretsStayOutOfLogs(t *testing.T) {
	t.Parallel()
	s := webhook.NewSecret()
	var buf bytes.Buffer
	slog.New(slog.NewJSONHandler(&buf, nil)).Info("rotated", "secret", s)
	require.NotContains(t, buf.String(), s.String())
	require.Contains(t, buf.String(), "redacted")
}
