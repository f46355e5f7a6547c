package review_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"
	"github.com/stretchr/testify/require"

	"github.com/appruntime/appruntime/internal/gateway"
	"github.com/appruntime/appruntime/internal/review"
	"github.com/appruntime/appruntime/internal/webhook"
)

// setKeyring stores k as the agent's webhook keyring, as the admin service
// does, and points its webhook at url.
func (p *parked) setKeyring(t *testing.T, url string, k webhook.Keyring) {
	t.Helper()
	raw, err := json.Marshal(k)
	require.NoError(t, err)
	sealed, err := p.box.Seal(raw)
	require.NoError(t, err)
	require.NoError(t, p.st.DB.Exec("UPDATE agents SET resume_webhook_url = ?, webhook_secret_enc = ? WHERE id = ?",
		url, sealed, p.tn.Agent.ID).Error)
}

// deliverOne releases a new await and delivers its resume event through r,
// and returns the one request the receiver got for it.
func (p *parked) deliverOne(t *testing.T, r *review.Resumer, rc *receiver) received {
	t.Helper()
	step, _ := p.addAwait(t)
	id := p.release(t, step)
	seen := len(rc.requests())
	require.NoError(t, r.HandleWebhook(context.Background(), id))
	got := rc.requests()
	require.Len(t, got, seen+1)
	require.Equal(t, id, got[seen].header.Get(webhook.HeaderID), "webhook-id is the event id")
	return got[seen]
}

func library(t *testing.T, secret string) *standardwebhooks.Webhook {
	t.Helper()
	wh, err := standardwebhooks.NewWebhook(secret)
	require.NoError(t, err)
	return wh
}

// TestRealDeliveriesVerifyWithTheStandardWebhooksLibrary checks real
// deliveries with the off-the-shelf Go library of standardwebhooks.com: it
// accepts one as sent, refuses it with one byte changed, and refuses one
// whose timestamp is ten minutes old although its signature is right.
func TestRealDeliveriesVerifyWithTheStandardWebhooksLibrary(t *testing.T) {
	t.Parallel()
	p := newParked(t)
	rc := newReceiver(t, http.StatusNoContent)
	secret := webhook.NewSecret()
	p.setKeyring(t, rc.URL+"/hook", webhook.Keyring{Current: secret})
	wh := library(t, secret.String())

	d := p.deliverOne(t, p.resumer, rc)
	require.NoError(t, wh.Verify(d.body, d.header))
	require.Len(t, strings.Fields(d.header.Get(webhook.HeaderSignature)), 1, "one secret, one signature")
	tampered := bytes.Replace(d.body, []byte(`"task.resumed"`), []byte(`"task.resumeD"`), 1)
	require.NotEqual(t, d.body, tampered)
	require.ErrorIs(t, wh.Verify(tampered, d.header), standardwebhooks.ErrNoMatchingSignature)
	require.ErrorIs(t, library(t, webhook.NewSecret().String()).Verify(d.body, d.header), standardwebhooks.ErrNoMatchingSignature)

	// The transition release also signs the X-Appruntime-* headers, with
	// the same key and timestamp.
	require.NoError(t, webhook.VerifyLegacy(secret.Key(), d.header, d.body, 5*time.Minute))
	require.Equal(t, d.header.Get(webhook.HeaderTimestamp), d.header.Get(webhook.LegacyHeaderTimestamp))
	require.Equal(t, d.header.Get(webhook.HeaderID), d.header.Get(webhook.LegacyHeaderEventID))

	// A delivery made ten minutes ago (a replay, or a receiver's clock that
	// far off) is refused on its timestamp alone.
	late := review.NewResumer(review.ResumerOptions{
		Store: p.st, Redis: p.rd.Client, Queue: p.rd.Queues.Events, Secrets: p.box,
		HTTPClient: gateway.NewClient(loopback, 0), Log: quiet,
		NowFunc: func() time.Time { return time.Now().Add(-10 * time.Minute) },
	})
	old := p.deliverOne(t, late, rc)
	require.ErrorIs(t, wh.Verify(old.body, old.header), standardwebhooks.ErrMessageTooOld)
	require.NoError(t, wh.VerifyIgnoringTimestamp(old.body, old.header), "the signature itself is right")
}

// TestRotationSignsWithBothSecretsDuringTheOverlap checks a rotated
// keyring's deliveries: two signatures, each verifying with its own secret,
// then only the new one once the overlap ended.
func TestRotationSignsWithBothSecretsDuringTheOverlap(t *testing.T) {
	t.Parallel()
	p := newParked(t)
	rc := newReceiver(t, http.StatusNoContent)
	first := webhook.NewSecret()
	second := webhook.NewSecret()
	rotated, err := webhook.Keyring{Current: first}.Rotate(second, time.Now(), time.Hour)
	require.NoError(t, err)
	p.setKeyring(t, rc.URL+"/hook", rotated)

	d := p.deliverOne(t, p.resumer, rc)
	require.Len(t, strings.Fields(d.header.Get(webhook.HeaderSignature)), 2)
	require.NoError(t, library(t, first.String()).Verify(d.body, d.header), "the receiver still on the old secret")
	require.NoError(t, library(t, second.String()).Verify(d.body, d.header), "the receiver already on the new one")
	require.NoError(t, webhook.VerifyLegacy(second.Key(), d.header, d.body, time.Minute), "the legacy header: the current key")

	expired, err := webhook.Keyring{Current: first}.Rotate(second, time.Now().Add(-2*time.Hour), time.Hour)
	require.NoError(t, err)
	p.setKeyring(t, rc.URL+"/hook", expired)
	d = p.deliverOne(t, p.resumer, rc)
	require.Len(t, strings.Fields(d.header.Get(webhook.HeaderSignature)), 1)
	require.ErrorIs(t, library(t, first.String()).Verify(d.body, d.header), standardwebhooks.ErrNoMatchingSignature)
	require.NoError(t, library(t, second.String()).Verify(d.body, d.header))
}

// TestALegacySecretVerifiesAsItsReencodedForm checks the migration path: an
// agent whose secret was stored before keyrings (the bare string) is
// verified by the library under "whsec_" + base64(that string), and by the
// old scheme under the string itself.
func TestALegacySecretVerifiesAsItsReencodedForm(t *testing.T) {
	t.Parallel()
	p := newParked(t)
	rc := newReceiver(t, http.StatusNoContent)
	p.setWebhook(t, rc.URL+"/hook") // the bare legacy string, sealed

	d := p.deliverOne(t, p.resumer, rc)
	reencoded := webhook.SecretPrefix + base64.StdEncoding.EncodeToString([]byte(webhookSecret))
	require.NoError(t, library(t, reencoded).Verify(d.body, d.header))
	require.NoError(t, webhook.VerifyLegacy([]byte(webhookSecret), d.header, d.body, time.Minute))
}
