package notify

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"time"

	"gorm.io/gorm"
	"gorm.io/gorm/clause"

	"github.com/appruntime/appruntime/internal/apperr"
	"github.com/appruntime/appruntime/internal/audit"
	"github.com/appruntime/appruntime/internal/config"
	"github.com/appruntime/appruntime/internal/crypt"
	"github.com/appruntime/appruntime/internal/gateway"
	"github.com/appruntime/appruntime/internal/review"
	"github.com/appruntime/appruntime/internal/store"
	"github.com/appruntime/appruntime/internal/webhook"
	"github.com/appruntime/appruntime/models"
)

// A pass's budgets: whatever a pass leaves is the next pass's, so one
// workspace's pools or one slow receiver never hold up the others for long.
const (
	// MaxPoolsPerPass is how many watched pools one pass reads; the next
	// pass goes on after the last one read.
	MaxPoolsPerPass = 200
	// MaxWaitingRead is how many waiting tasks of one pool a pass reads,
	// the longest-waiting first.
	MaxWaitingRead = 1000
	// MaxTasksPerDigest is how many tasks one digest lists; the others
	// are told in the next pass's.
	MaxTasksPerDigest = 100
	// MaxDeliveriesPerPass is how many due digests one pass sends,
	// DeliveryConcurrency at a time.
	MaxDeliveriesPerPass = 50
	DeliveryConcurrency  = 4
	// DeliveryLease is how long an attempt holds its digest: another
	// replica's pass takes it up after that if this one died mid-attempt.
	DeliveryLease = 2 * time.Minute
	// EventType is the type of a digest's body.
	EventType = "review_pool.waiting"
)

// Options are what a Notifier is built from.
type Options struct {
	Store *store.Store
	// Secrets opens pools' sealed webhook secrets.
	Secrets *crypt.Box
	// HTTPClient posts the webhooks; it must dial through the SSRF guard
	// (gateway.NewClient). The Notifier uses a copy that follows no
	// redirect.
	HTTPClient *http.Client
	// Mailer emails digests; nil emails nothing (a pool's addresses wait
	// for SMTP_URL).
	Mailer *Mailer
	// Now is the clock; nil is time.Now.
	Now func() time.Time
	Log *slog.Logger
}

// Notifier runs the notify pass. It is safe for concurrent use, and
// passes in several replicas at once tell each wait once: a pool's scan
// locks its row (SKIP LOCKED on Postgres; SQLite serialises writers) and a
// digest's attempt is taken by a conditional update of its attempt count.
type Notifier struct {
	o      Options
	client *http.Client
	mu     sync.Mutex
	after  string // the last pool id the previous pass read
}

// New returns a Notifier.
func New(o Options) *Notifier {
	client := *o.HTTPClient
	client.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Log == nil {
		o.Log = slog.Default()
	}
	return &Notifier{o: o, client: &client}
}

// PassResult counts what one pass did.
type PassResult struct {
	Escalated, Digests, Delivered, Failed int
}

// Pass escalates and tells the waiting work of up to MaxPoolsPerPass
// watched pools, then sends up to MaxDeliveriesPerPass due digests.
func (n *Notifier) Pass(ctx context.Context) (PassResult, error) {
	var r PassResult
	err := n.scan(ctx, &r)
	return r, errors.Join(err, n.deliver(ctx, &r))
}

// waiting is a task waiting in a pool: unclaimed, parked on an app-tool
// await, since max(its await's time, when it reached the pool).
type waiting struct {
	TaskID   string
	Title    string
	AgentID  string
	AwaitID  string
	ParkedAt time.Time
	RoutedAt *time.Time
	// CreatedAt is the task's, copied onto its task_review_pools row.
	CreatedAt time.Time
}

func (w waiting) since() time.Time {
	if w.RoutedAt != nil && w.RoutedAt.After(w.ParkedAt) {
		return *w.RoutedAt
	}
	return w.ParkedAt
}

const waitingSQL = `SELECT t.id AS task_id, t.title, t.agent_id, a.id AS await_id, a.created_at AS parked_at, tp.routed_at, t.created_at
FROM task_review_pools tp
JOIN tasks t ON t.id = tp.task_id
JOIN task_awaits a ON a.task_id = t.id AND a.status = 'pending' AND a.source_type = 'app_tool'
WHERE tp.pool_id = ? AND t.workspace_id = ? AND t.status = 'waiting_for_input'
  AND (t.claim_expires_at IS NULL OR t.claim_expires_at <= ?)
ORDER BY a.created_at, a.id LIMIT ?`

// scan reads the next watched pools and handles each in a transaction of
// its own.
func (n *Notifier) scan(ctx context.Context, r *PassResult) error {
	n.mu.Lock()
	after := n.after
	n.mu.Unlock()
	var pools []models.ReviewPool
	q := n.o.Store.DB.WithContext(ctx).Where("wait_threshold_seconds IS NOT NULL OR escalate_after_seconds IS NOT NULL")
	if after != "" {
		q = q.Where("id > ?", after)
	}
	err := q.Order("id").Limit(MaxPoolsPerPass).Find(&pools).Error
	if err != nil {
		return fmt.Errorf("notify: list watched pools: %w", err)
	}
	next := ""
	if len(pools) == MaxPoolsPerPass {
		next = pools[len(pools)-1].ID
	}
	n.mu.Lock()
	n.after = next
	n.mu.Unlock()
	var errs []error
	for _, p := range pools {
		if ctx.Err() != nil {
			break
		}
		if err := n.scanPool(ctx, p.ID, r); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// scanPool escalates and tells the waiting work of pool id.
func (n *Notifier) scanPool(ctx context.Context, id string, r *PassResult) error {
	return n.o.Store.Tx(ctx, func(tx *gorm.DB) error {
		q := tx.Where("id = ?", id)
		if n.o.Store.Dialect == config.Postgres {
			q = q.Clauses(clause.Locking{Strength: "UPDATE", Options: "SKIP LOCKED"})
		}
		var pools []models.ReviewPool
		if err := q.Limit(1).Find(&pools).Error; err != nil {
			return fmt.Errorf("notify: lock pool %s: %w", id, err)
		}
		if len(pools) == 0 {
			return nil // another replica's pass holds it, or it is gone
		}
		p := pools[0]
		now := n.o.Now().UTC()
		var rows []waiting
		if err := tx.Raw(waitingSQL, p.ID, p.WorkspaceID, now, MaxWaitingRead).Scan(&rows).Error; err != nil {
			return fmt.Errorf("notify: read waiting tasks of pool %s: %w", p.ID, err)
		}
		seen := map[string]bool{}
		var stay []waiting
		for _, w := range rows {
			if seen[w.TaskID] {
				continue // a task's oldest pending await names its wait
			}
			seen[w.TaskID] = true
			if p.EscalateAfterSeconds != nil && p.EscalateToPoolID != nil &&
				now.Sub(w.since()) >= time.Duration(*p.EscalateAfterSeconds)*time.Second {
				if err := escalate(ctx, tx, p, w, now); err != nil {
					return err
				}
				r.Escalated++
				continue
			}
			stay = append(stay, w)
		}
		made, err := n.tell(tx, p, stay, now)
		r.Digests += made
		return err
	})
}

// escalate moves task w from pool p to p's target pool, as it stands now:
// its wait there counts from now.
func escalate(ctx context.Context, tx *gorm.DB, p models.ReviewPool, w waiting, now time.Time) error {
	to := *p.EscalateToPoolID
	if err := tx.Exec(`DELETE FROM task_review_pools WHERE task_id = ? AND pool_id = ?`, w.TaskID, p.ID).Error; err != nil {
		return fmt.Errorf("notify: take task %s out of pool %s: %w", w.TaskID, p.ID, err)
	}
	row := models.TaskReviewPool{TaskID: w.TaskID, PoolID: to, RoutedAt: &now, TaskCreatedAt: w.CreatedAt}
	if err := tx.Clauses(clause.OnConflict{DoNothing: true}).Create(&row).Error; err != nil {
		return fmt.Errorf("notify: route task %s to pool %s: %w", w.TaskID, to, err)
	}
	return audit.Record(ctx, tx, audit.Entry{WorkspaceID: p.WorkspaceID, Actor: "system", Action: "review_pool.escalate",
		TargetType: "task", TargetID: w.TaskID, Detail: map[string]any{
			"from_pool_id": p.ID, "to_pool_id": to, "waited_seconds": int64(now.Sub(w.since()).Seconds()),
			"escalate_after_seconds": *p.EscalateAfterSeconds,
		}})
}

// DigestTask is a task as a digest lists it.
type DigestTask struct {
	TaskID         string    `json:"task_id"`
	Title          string    `json:"title"`
	AgentID        string    `json:"agent_id"`
	WaitingSince   time.Time `json:"waiting_since"`
	WaitingSeconds int64     `json:"waiting_seconds"`
}

// Digest is the body of a digest's webhook (and what its email says).
type Digest struct {
	ID                   string       `json:"id"`
	Type                 string       `json:"type"`
	WorkspaceID          string       `json:"workspace_id"`
	PoolID               string       `json:"pool_id"`
	PoolName             string       `json:"pool_name"`
	WaitThresholdSeconds int          `json:"wait_threshold_seconds"`
	CreatedAt            time.Time    `json:"created_at"`
	Tasks                []DigestTask `json:"tasks"`
}

// tell records a digest per channel of pool p of the tasks of stay newly
// waiting past its threshold (at most MaxTasksPerDigest), and notes their
// waits as told. A pool with no channel tells nothing and notes nothing.
func (n *Notifier) tell(tx *gorm.DB, p models.ReviewPool, stay []waiting, now time.Time) (int, error) {
	if p.WaitThresholdSeconds == nil || len(stay) == 0 {
		return 0, nil
	}
	channels := map[string]string{}
	if p.NotifyWebhookURL != "" {
		channels[models.DigestWebhook] = p.NotifyWebhookURL
	}
	if p.NotifyEmails != "" && n.o.Mailer != nil {
		channels[models.DigestEmail] = p.NotifyEmails
	}
	if len(channels) == 0 {
		return 0, nil
	}
	threshold := time.Duration(*p.WaitThresholdSeconds) * time.Second
	var over []waiting
	var awaitIDs []string
	for _, w := range stay {
		if now.Sub(w.since()) >= threshold {
			over = append(over, w)
			awaitIDs = append(awaitIDs, w.AwaitID)
		}
	}
	if len(over) == 0 {
		return 0, nil
	}
	var told []string
	if err := tx.Model(&models.ReviewPoolNotice{}).Where("pool_id = ? AND await_id IN ?", p.ID, awaitIDs).Pluck("await_id", &told).Error; err != nil {
		return 0, fmt.Errorf("notify: read told waits of pool %s: %w", p.ID, err)
	}
	toldSet := map[string]bool{}
	for _, id := range told {
		toldSet[id] = true
	}
	var tasks []DigestTask
	var notices []models.ReviewPoolNotice
	for _, w := range over {
		if toldSet[w.AwaitID] || len(tasks) == MaxTasksPerDigest {
			continue
		}
		tasks = append(tasks, DigestTask{TaskID: w.TaskID, Title: w.Title, AgentID: w.AgentID, WaitingSince: w.since(),
			WaitingSeconds: int64(now.Sub(w.since()).Seconds())})
		notices = append(notices, models.ReviewPoolNotice{PoolID: p.ID, AwaitID: w.AwaitID, NotifiedAt: now})
	}
	if len(tasks) == 0 {
		return 0, nil
	}
	if err := tx.Clauses(clause.OnConflict{DoNothing: true}).Create(&notices).Error; err != nil {
		return 0, fmt.Errorf("notify: note told waits of pool %s: %w", p.ID, err)
	}
	made := 0
	for _, channel := range []string{models.DigestWebhook, models.DigestEmail} {
		target, ok := channels[channel]
		if !ok {
			continue
		}
		d := Digest{ID: models.NewID(), Type: EventType, WorkspaceID: p.WorkspaceID, PoolID: p.ID, PoolName: p.Name,
			WaitThresholdSeconds: *p.WaitThresholdSeconds, CreatedAt: now, Tasks: tasks}
		body, err := json.Marshal(d)
		if err != nil {
			return made, fmt.Errorf("notify: encode digest: %w", err)
		}
		row := models.ReviewPoolDigest{ID: d.ID, WorkspaceID: p.WorkspaceID, PoolID: p.ID, Channel: channel, Target: target,
			Body: string(body), TaskCount: len(tasks), CreatedAt: now, NextAttemptAt: &now}
		if err := tx.Create(&row).Error; err != nil {
			return made, fmt.Errorf("notify: record digest of pool %s: %w", p.ID, err)
		}
		made++
	}
	return made, nil
}

// deliver sends the due digests, DeliveryConcurrency at a time.
func (n *Notifier) deliver(ctx context.Context, r *PassResult) error {
	now := n.o.Now().UTC()
	var due []models.ReviewPoolDigest
	err := n.o.Store.DB.WithContext(ctx).Where("next_attempt_at IS NOT NULL AND next_attempt_at <= ?", now).
		Order("next_attempt_at, id").Limit(MaxDeliveriesPerPass).Find(&due).Error
	if err != nil {
		return fmt.Errorf("notify: list due digests: %w", err)
	}
	var mu sync.Mutex
	var errs []error
	var wg sync.WaitGroup
	slots := make(chan struct{}, DeliveryConcurrency)
	for _, d := range due {
		slots <- struct{}{}
		wg.Add(1)
		go func() {
			defer func() { <-slots; wg.Done() }()
			sent, err := n.attempt(ctx, d)
			mu.Lock()
			defer mu.Unlock()
			switch {
			case err != nil:
				errs = append(errs, err)
			case sent:
				r.Delivered++
			default:
				r.Failed++
			}
		}()
	}
	wg.Wait()
	return errors.Join(errs...)
}

// attempt takes digest d (unless another pass took it first), sends it
// once and records the outcome and the next attempt's time: the resume
// webhooks' backoff (review.WebhookRetryDelay) up to
// review.WebhookMaxAttempts attempts; a refusal retrying cannot fix (a
// refused address, a pool without a secret) is final. It reports whether d
// was delivered.
func (n *Notifier) attempt(ctx context.Context, d models.ReviewPoolDigest) (bool, error) {
	db := n.o.Store.DB.WithContext(ctx)
	lease := n.o.Now().UTC().Add(DeliveryLease)
	took := db.Model(&models.ReviewPoolDigest{}).Where("id = ? AND attempt = ? AND next_attempt_at IS NOT NULL", d.ID, d.Attempt).
		Updates(map[string]any{"attempt": d.Attempt + 1, "next_attempt_at": lease})
	if took.Error != nil {
		return false, fmt.Errorf("notify: take digest %s: %w", d.ID, took.Error)
	}
	if took.RowsAffected == 0 {
		return false, nil // another pass took it
	}
	d.Attempt++
	status, sendErr := n.send(ctx, d)
	finished := n.o.Now().UTC()
	update := map[string]any{"status_code": status, "error": "", "next_attempt_at": nil}
	if sendErr == nil {
		update["delivered_at"] = finished
	} else {
		update["error"] = truncate(sendErr.Error(), 500)
		if d.Attempt < review.WebhookMaxAttempts && !refused(sendErr) {
			update["next_attempt_at"] = finished.Add(review.WebhookRetryDelay(d.Attempt - 1))
		}
		n.o.Log.WarnContext(ctx, "review pool digest not delivered", "digest_id", d.ID, "pool_id", d.PoolID,
			"channel", d.Channel, "attempt", d.Attempt, "error", sendErr.Error())
	}
	err := n.o.Store.DB.WithContext(context.WithoutCancel(ctx)).Model(&models.ReviewPoolDigest{}).Where("id = ?", d.ID).Updates(update).Error
	if err != nil {
		return false, fmt.Errorf("notify: record digest %s outcome: %w", d.ID, err)
	}
	return sendErr == nil, nil
}

// refused reports whether err is a refusal retrying cannot fix.
func refused(err error) bool {
	switch apperr.CodeOf(err) {
	case apperr.Invalid, apperr.Forbidden, apperr.NotFound, apperr.NotImplemented:
		return true
	}
	return false
}

// send sends digest d once through its channel and returns the HTTP
// status (0 for email).
func (n *Notifier) send(ctx context.Context, d models.ReviewPoolDigest) (int, error) {
	if d.Channel == models.DigestEmail {
		if n.o.Mailer == nil {
			return 0, apperr.NotImplementedf("no SMTP_URL is configured to email digests")
		}
		var body Digest
		if err := json.Unmarshal([]byte(d.Body), &body); err != nil {
			return 0, apperr.Invalidf("digest %s: unreadable body: %v", d.ID, err)
		}
		subject, text := emailText(body)
		return 0, n.o.Mailer.Send(ctx, strings.Split(d.Target, ","), subject, text)
	}
	return n.post(ctx, d)
}

// post sends a webhook digest, signed with the pool's keyring.
func (n *Notifier) post(ctx context.Context, d models.ReviewPoolDigest) (int, error) {
	var p models.ReviewPool
	if err := n.o.Store.DB.WithContext(ctx).Where("id = ?", d.PoolID).Take(&p).Error; err != nil {
		return 0, store.NotFound(err, "notify: load pool", "review pool")
	}
	if len(p.NotifyWebhookSecretEnc) == 0 {
		return 0, apperr.Invalidf("review pool %s has no webhook secret", p.ID)
	}
	if n.o.Secrets == nil {
		return 0, apperr.NotImplementedf("no SECRETS_KEY is configured to open webhook secrets")
	}
	opened, err := n.o.Secrets.Open(p.NotifyWebhookSecretEnc)
	if err != nil {
		return 0, fmt.Errorf("notify: open webhook secret of pool %s: %w", p.ID, err)
	}
	keys, err := webhook.ParseStoredKeyring(opened)
	if err != nil {
		return 0, apperr.Wrap(err, apperr.Invalid, "review pool %s: its stored webhook secret is unreadable", p.ID)
	}
	ctx, cancel := context.WithTimeout(ctx, review.WebhookAttemptTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, d.Target, bytes.NewReader([]byte(d.Body)))
	if err != nil {
		return 0, apperr.Invalidf("review pool %s: notify_webhook_url: %v", p.ID, err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", "appruntime-webhook/1")
	if err := keys.Sign(req.Header, d.ID, n.o.Now(), []byte(d.Body)); err != nil {
		return 0, apperr.Wrap(err, apperr.Invalid, "review pool %s: the digest cannot be signed", p.ID)
	}
	res, err := n.client.Do(req)
	if err != nil {
		if gateway.IsBlocked(err) {
			return 0, apperr.Wrap(err, apperr.Forbidden, "review pool %s: notify_webhook_url resolves to a refused address", p.ID)
		}
		return 0, fmt.Errorf("notify: post digest: %w", err)
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(res.Body, 64<<10))
	_ = res.Body.Close()
	if res.StatusCode < 200 || res.StatusCode > 299 {
		return res.StatusCode, fmt.Errorf("notify: webhook answered %d", res.StatusCode)
	}
	return res.StatusCode, nil
}

// emailText is a digest as an email's subject and text.
func emailText(d Digest) (string, string) {
	var b strings.Builder
	fmt.Fprintf(&b, "%d task(s) have waited in review pool %q longer than %s:\n\n", len(d.Tasks), d.PoolName,
		time.Duration(d.WaitThresholdSeconds)*time.Second)
	for _, t := range d.Tasks {
		fmt.Fprintf(&b, "- %s (task %s), waiting %s since %s\n", t.Title, t.TaskID,
			(time.Duration(t.WaitingSeconds) * time.Second).String(), t.WaitingSince.Format(time.RFC3339))
	}
	fmt.Fprintf(&b, "\nDigest %s. Each wait is told once per pool.\n", d.ID)
	return fmt.Sprintf("[appruntime] %d task(s) waiting in %s", len(d.Tasks), d.PoolName), b.String()
}

// truncate shortens s to at most n bytes without splitting a character.
func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return strings.ToValidUTF8(s[:n], "")
}
