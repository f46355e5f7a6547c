package review

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/hibiken/asynq"
	"gorm.io/gorm"
	"gorm.io/gorm/clause"

	"github.com/appruntime/appruntime/internal/apperr"
	"github.com/appruntime/appruntime/internal/gateway"
	"github.com/appruntime/appruntime/internal/metrics"
	"github.com/appruntime/appruntime/internal/store"
	"github.com/appruntime/appruntime/internal/webhook"
	"github.com/appruntime/appruntime/models"
)

// Webhook delivery rules.
const (
	// WebhookAttemptTimeout bounds one POST to an agent's webhook.
	WebhookAttemptTimeout = 10 * time.Second
	// WebhookInFlightFor is how long an attempt recorded and not finished
	// is taken to be another run's POST still in flight (twice an
	// attempt's bound), so a second run of the same delivery (a job the
	// sweep re-created beside one still running) waits for it rather than
	// sending the event twice. Past it, the run that recorded it is taken
	// to be gone (a worker killed mid-POST) and the event is sent again,
	// with the same webhook-id: delivery is at least once
	// (docs/agent-platforms.md#webhook-event-catalogue).
	WebhookInFlightFor = 2 * WebhookAttemptTimeout
	// WebhookMaxRetry is how many times a failed delivery is retried
	// (2^n s apart plus jitter, up to WebhookMaxBackoff: about four to five
	// hours from the first attempt to the last).
	WebhookMaxRetry = 15
	// WebhookMaxBackoff caps the wait between two attempts.
	WebhookMaxBackoff = time.Hour
	// maxRecordedError keeps a delivery row's error readable.
	maxRecordedError = 500
	// maxDrainedBody is how much of a receiver's reply is read (and
	// discarded) so the connection can be reused.
	maxDrainedBody = 64 << 10
)

// WebhookRetryDelay is how long to wait before retry n+1 of a failed
// delivery (n = retries so far): 2^n seconds plus up to half again of
// jitter, so receivers coming back from an outage are not hit in lockstep,
// capped at WebhookMaxBackoff.
func WebhookRetryDelay(n int) time.Duration {
	base := WebhookMaxBackoff
	if n >= 0 && n < 12 {
		base = time.Duration(1<<n) * time.Second
	}
	d := base + rand.N(base/2+1)
	return min(d, WebhookMaxBackoff)
}

// HandleWebhook delivers resume event eventID to the agent's resume
// webhook: one signed POST, recorded in webhook_deliveries before it is sent
// (attempt number) and completed after (status, error, duration,
// finished_at). A transport error or a non-2xx reply
// (a redirect included: it is not followed) is returned so the job is
// retried (WebhookRetryDelay); a destination the SSRF guard refuses, or an
// agent without a webhook secret, is an apperr error retrying cannot fix. An
// event already delivered is not sent again, and one whose attempt another
// run recorded and has not finished (within WebhookInFlightFor) is retried
// once that attempt is over or taken to be gone (startAttempt).
func (r *Resumer) HandleWebhook(ctx context.Context, eventID string) error {
	ev, err := r.loadEvent(ctx, eventID)
	if err != nil {
		return err
	}
	db := r.store.DB.WithContext(ctx)
	var agent models.Agent
	err = db.Where("id = ?", ev.AgentID).Take(&agent).Error
	if errors.Is(err, gorm.ErrRecordNotFound) || (err == nil && agent.ResumeWebhookURL == "") {
		r.log.InfoContext(ctx, "resume webhook dropped: the agent has no webhook now", "event_id", eventID, "agent_id", ev.AgentID)
		return nil
	}
	if err != nil {
		return fmt.Errorf("review: load agent %s: %w", ev.AgentID, err)
	}
	if gone, err := isTaskGone(db, ev.TaskID); err != nil || gone {
		if err != nil {
			return err
		}
		return r.done(ctx, eventID) // a deleted task's deliveries went with it
	}
	// The attempt is recorded before it is sent: a worker killed while the
	// POST is in flight leaves it recorded, unfinished (finished_at null).
	attempt := models.WebhookDelivery{
		ID: models.NewID(), EventID: eventID, EventType: ev.Type, AgentID: agent.ID, TaskID: ev.TaskID,
		URL: agent.ResumeWebhookURL,
	}
	start, err := r.startAttempt(ctx, &attempt)
	if err != nil {
		return err
	}
	switch start.outcome {
	case attemptDelivered: // by an earlier run that was not acknowledged
		return r.done(ctx, eventID)
	case attemptsSpent:
		if err := r.done(ctx, eventID); err != nil {
			return err
		}
		return fmt.Errorf("review: webhook of %s gave up after %d attempts: %w", eventID, start.prior, asynq.SkipRetry)
	case attemptInFlight:
		return &WebhookRetry{Err: fmt.Errorf("review: webhook of %s: an attempt recorded by another run is still in flight", eventID), Delay: start.wait}
	}
	sendErr := r.post(ctx, agent, ev, &attempt)
	r.metrics.ObserveWebhookAttempt(webhookOutcome(sendErr, attempt.StatusCode))
	if sendErr != nil {
		attempt.Error = truncate(sendErr.Error(), maxRecordedError)
	}
	finished := time.Now().UTC()
	attempt.FinishedAt = &finished
	var delay time.Duration
	final := sendErr == nil || attempt.Attempt >= WebhookMaxAttempts || refused(sendErr)
	if !final {
		// The next attempt's time is recorded with this one, so the
		// schedule outlives the job that carries it.
		delay = WebhookRetryDelay(attempt.Attempt - 1)
		next := finished.Add(delay)
		attempt.NextAttemptAt = &next
	}
	err = r.store.DB.WithContext(context.WithoutCancel(ctx)).Model(&attempt).
		Select("status_code", "error", "duration_ms", "finished_at", "next_attempt_at").Updates(&attempt).Error
	if err != nil {
		return errors.Join(sendErr, fmt.Errorf("review: record webhook outcome: %w", err))
	}
	if final {
		if err := r.done(ctx, eventID); err != nil {
			return errors.Join(sendErr, err)
		}
		if sendErr != nil && !refused(sendErr) {
			return fmt.Errorf("%w: %w", sendErr, asynq.SkipRetry)
		}
		return sendErr
	}
	return &WebhookRetry{Err: sendErr, Delay: delay}
}

// attemptOutcome is what startAttempt found.
type attemptOutcome int

const (
	attemptSend      attemptOutcome = iota // recorded: send it
	attemptDelivered                       // an earlier attempt was answered 2xx
	attemptsSpent                          // WebhookMaxAttempts were made
	attemptInFlight                        // an unfinished attempt is younger than WebhookInFlightFor
)

// attemptStart is startAttempt's answer: the outcome, the attempts made
// before, and for attemptInFlight how long until the one in flight is
// taken to be gone.
type attemptStart struct {
	outcome attemptOutcome
	prior   int
	wait    time.Duration
}

// startAttempt decides, holding the event's outbox row (SELECT … FOR
// UPDATE on Postgres; SQLite's transaction holds its one writer lock), whether
// the delivery sends now, and if so records attempt as the next attempt
// (its number and created_at filled in). Two runs of one delivery take the
// lock in turn: the second finds the first's attempt recorded and
// unfinished, and waits. The attempt count is Postgres's, not the job's: a
// delivery re-created after Redis lost its retry goes on from where it was.
func (r *Resumer) startAttempt(ctx context.Context, attempt *models.WebhookDelivery) (attemptStart, error) {
	var start attemptStart
	err := r.store.Tx(ctx, func(tx *gorm.DB) error {
		var row models.Outbox
		err := tx.Clauses(clause.Locking{Strength: "UPDATE"}).Select("id").Where("id = ?", attempt.EventID).Take(&row).Error
		if err := store.NotFound(err, "review: lock resume event", "resume event "+attempt.EventID); err != nil {
			return err
		}
		var prior []models.WebhookDelivery
		if err := tx.Select("status_code", "created_at", "finished_at").Where("event_id = ?", attempt.EventID).
			Find(&prior).Error; err != nil {
			return fmt.Errorf("review: load deliveries of %s: %w", attempt.EventID, err)
		}
		start.prior = len(prior)
		now := time.Now().UTC()
		for _, d := range prior {
			if d.StatusCode >= 200 && d.StatusCode < 300 {
				start.outcome = attemptDelivered
				return nil
			}
			if d.FinishedAt == nil {
				if wait := d.CreatedAt.Add(WebhookInFlightFor).Sub(now); wait > 0 {
					// the youngest such attempt decides
					start.outcome, start.wait = attemptInFlight, max(start.wait, wait, time.Second)
				}
			}
		}
		if start.outcome == attemptInFlight {
			return nil
		}
		if len(prior) >= WebhookMaxAttempts {
			start.outcome = attemptsSpent
			return nil
		}
		attempt.Attempt, attempt.CreatedAt = len(prior)+1, now
		if err := tx.Create(attempt).Error; err != nil {
			return fmt.Errorf("review: record webhook attempt: %w", err)
		}
		return nil
	})
	return start, err
}

// refused reports whether err is a refusal retrying cannot fix (a
// destination the guard refuses, no secret, no URL): the worker archives
// the job at once.
func refused(err error) bool {
	switch apperr.CodeOf(err) {
	case apperr.Invalid, apperr.Forbidden, apperr.NotFound:
		return true
	}
	return false
}

// WebhookMaxAttempts is how many attempts a delivery makes in all: the
// first and WebhookMaxRetry retries.
const WebhookMaxAttempts = WebhookMaxRetry + 1

// WebhookRetry is a failed delivery attempt to be retried after Delay, the
// wait its attempt recorded in webhook_deliveries.next_attempt_at: the
// worker's retry delay reads it, so the schedule is Postgres's.
type WebhookRetry struct {
	Err   error
	Delay time.Duration
}

func (e *WebhookRetry) Error() string { return e.Err.Error() }

// Unwrap returns the attempt's error.
func (e *WebhookRetry) Unwrap() error { return e.Err }

// webhookOutcome classifies one attempt for the metrics: delivered, an
// answer other than 2xx, no answer, or never sent (an apperr error: a
// refused address, a missing secret or URL).
func webhookOutcome(sendErr error, status int) metrics.WebhookOutcome {
	switch {
	case sendErr == nil:
		return metrics.WebhookDelivered
	case status != 0:
		return metrics.WebhookRejected
	}
	var ae *apperr.Error
	if errors.As(sendErr, &ae) {
		return metrics.WebhookRefused
	}
	return metrics.WebhookUnreachable
}

// post sends the signed event once and fills attempt's status and duration.
func (r *Resumer) post(ctx context.Context, agent models.Agent, ev ResumeEvent, attempt *models.WebhookDelivery) error {
	u, err := url.Parse(agent.ResumeWebhookURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return apperr.Invalidf("agent %s: resume_webhook_url %q is not an http(s) URL", agent.ID, agent.ResumeWebhookURL)
	}
	keys, err := r.webhookKeys(agent)
	if err != nil {
		return err
	}
	body, err := json.Marshal(ev)
	if err != nil {
		return fmt.Errorf("review: marshal resume event: %w", err)
	}
	now := r.now()
	ctx, cancel := context.WithTimeout(ctx, WebhookAttemptTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, u.String(), bytes.NewReader(body))
	if err != nil {
		return apperr.Invalidf("agent %s: resume_webhook_url: %v", agent.ID, err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", "appruntime-webhook/1")
	// Standard Webhooks headers, signed by every live secret of the
	// keyring; for this transition release also the X-Appruntime-* ones,
	// with the current key and the same timestamp (docs/agent-platforms.md#webhooks-standard-webhooks).
	if err := keys.Sign(req.Header, ev.ID, now, body); err != nil {
		return apperr.Wrap(err, apperr.Invalid, "agent %s: the resume webhook cannot be signed", agent.ID)
	}
	keys.SignLegacy(req.Header, ev.ID, now, body)

	start := time.Now()
	res, err := r.client.Do(req)
	attempt.DurationMS = time.Since(start).Milliseconds()
	if err != nil {
		if gateway.IsBlocked(err) {
			return apperr.Wrap(err, apperr.Forbidden, "agent %s: resume_webhook_url resolves to a refused address", agent.ID)
		}
		return fmt.Errorf("review: post webhook: %w", err)
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(res.Body, maxDrainedBody))
	_ = res.Body.Close()
	attempt.DurationMS = time.Since(start).Milliseconds()
	attempt.StatusCode = res.StatusCode
	if res.StatusCode < 200 || res.StatusCode > 299 {
		return fmt.Errorf("review: webhook answered %d", res.StatusCode)
	}
	return nil
}

// webhookKeys opens the agent's sealed webhook keyring (a secret stored
// before keyrings is read as a legacy one: webhook.ParseStoredKeyring).
func (r *Resumer) webhookKeys(agent models.Agent) (webhook.Keyring, error) {
	if len(agent.WebhookSecretEnc) == 0 {
		return webhook.Keyring{}, apperr.Invalidf("agent %s has a resume_webhook_url but no webhook secret", agent.ID)
	}
	if r.secrets == nil {
		return webhook.Keyring{}, apperr.NotImplementedf("no SECRETS_KEY is configured to open webhook secrets")
	}
	opened, err := r.secrets.Open(agent.WebhookSecretEnc)
	if err != nil {
		return webhook.Keyring{}, fmt.Errorf("review: open webhook secret of agent %s: %w", agent.ID, err)
	}
	keys, err := webhook.ParseStoredKeyring(opened)
	if err != nil {
		return webhook.Keyring{}, apperr.Wrap(err, apperr.Invalid, "agent %s: its stored webhook secret is unreadable", agent.ID)
	}
	return keys, nil
}

// truncate shortens s to at most n bytes without splitting a character.
func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return strings.ToValidUTF8(s[:n], "")
}
