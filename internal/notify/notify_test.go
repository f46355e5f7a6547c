package notify_test

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/appruntime/appruntime/internal/crypt"
	"github.com/appruntime/appruntime/internal/gateway"
	"github.com/appruntime/appruntime/internal/logging"
	"github.com/appruntime/appruntime/internal/notify"
	"github.com/appruntime/appruntime/internal/store"
	"github.com/appruntime/appruntime/internal/testkit"
	"github.com/appruntime/appruntime/internal/webhook"
	"github.com/appruntime/appruntime/models"
)

var (
	quiet    = logging.New(io.Discard, slog.LevelError)
	loopback = []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}
	base     = time.Date(2026, 12, 7, 9, 0, 0, 0, time.UTC)
)

// receiver is a loopback webhook receiver that verifies each delivery's
// Standard Webhooks signature with the pool's secret, answering statuses in
// turn (then 200).
type receiver struct {
	*httptest.Server
	mu       sync.Mutex
	secret   webhook.Secret
	statuses []int
	got      []notify.Digest
	bad      []string
	now      func() time.Time
}

func newReceiver(t *testing.T, secret webhook.Secret, now func() time.Time, statuses ...int) *receiver {
	rc := &receiver{secret: secret, statuses: statuses, now: now}
	rc.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		rc.mu.Lock()
		defer rc.mu.Unlock()
		if err := rc.secret.Verify(r.Header, body, rc.now(), 0); err != nil {
			rc.bad = append(rc.bad, err.Error())
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		status := http.StatusOK
		if len(rc.statuses) > 0 {
			status, rc.statuses = rc.statuses[0], rc.statuses[1:]
		}
		if status == http.StatusOK {
			var d notify.Digest
			if err := json.Unmarshal(body, &d); err != nil || d.ID != r.Header.Get(webhook.HeaderID) {
				rc.bad = append(rc.bad, "body is not a digest named by webhook-id")
			}
			rc.got = append(rc.got, d)
		}
		w.WriteHeader(status)
	}))
	t.Cleanup(rc.Close)
	return rc
}

func (rc *receiver) digests() ([]notify.Digest, []string) {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return append([]notify.Digest(nil), rc.got...), append([]string(nil), rc.bad...)
}

// world is a workspace with two review pools (front escalating to back)
// and a clock the test moves.
type world struct {
	st          *store.Store
	tn          testkit.Tenant
	box         *crypt.Box
	secret      webhook.Secret
	front, back models.ReviewPool
	now         time.Time
	mu          sync.Mutex
}

func (w *world) clock() time.Time {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.now
}

func (w *world) advance(d time.Duration) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.now = w.now.Add(d)
}

func intp(n int) *int { return &n }

func newWorld(t *testing.T, st *store.Store) *world {
	t.Helper()
	box, err := crypt.New(testkit.TestKey)
	require.NoError(t, err)
	w := &world{st: st, tn: testkit.NewTenant(t, st.DB), box: box, secret: webhook.NewSecret(), now: base}
	w.back = models.ReviewPool{ID: models.NewID(), WorkspaceID: w.tn.Workspace.ID, Name: "seniors", CreatedAt: base, UpdatedAt: base}
	require.NoError(t, st.DB.Create(&w.back).Error)
	b, err := json.Marshal(webhook.Keyring{Current: w.secret})
	require.NoError(t, err)
	sealed, err := box.Seal(b)
	require.NoError(t, err)
	w.front = models.ReviewPool{ID: models.NewID(), WorkspaceID: w.tn.Workspace.ID, Name: "invoices", CreatedAt: base, UpdatedAt: base,
		ReviewPoolSettings: models.ReviewPoolSettings{WaitThresholdSeconds: intp(60), EscalateAfterSeconds: intp(600),
			EscalateToPoolID: &w.back.ID, NotifyWebhookSecretEnc: sealed, NotifyEmails: "lead@example.test,ops@example.test"}}
	require.NoError(t, st.DB.Create(&w.front).Error)
	return w
}

// park parks a task in pool, its await made ago before the clock.
func (w *world) park(t *testing.T, pool models.ReviewPool, title string, ago time.Duration) models.Task {
	t.Helper()
	task := models.Task{ID: models.NewID(), WorkspaceID: w.tn.Workspace.ID, AgentID: w.tn.Agent.ID, Title: title,
		Status: models.TaskWaitingForInput, CreatedAt: base.Add(-ago), UpdatedAt: base}
	require.NoError(t, w.st.DB.Create(&task).Error)
	step := models.Step{ID: models.NewID(), TaskID: task.ID, Kind: models.StepAppTool, Status: models.StepCompleted}
	require.NoError(t, w.st.DB.Create(&step).Error)
	require.NoError(t, w.st.DB.Create(&models.TaskAwait{ID: models.NewID(), TaskID: task.ID, SourceType: models.AwaitSourceAppTool,
		CorrelationKey: step.ID, Status: models.AwaitPending, CreatedAt: w.clock().Add(-ago)}).Error)
	require.NoError(t, w.st.DB.Create(&models.TaskReviewPool{TaskID: task.ID, PoolID: pool.ID, TaskCreatedAt: task.CreatedAt}).Error)
	return task
}

func (w *world) notifier(t *testing.T, mailer *notify.Mailer) *notify.Notifier {
	t.Helper()
	return notify.New(notify.Options{Store: w.st, Secrets: w.box, HTTPClient: gateway.NewClient(loopback, 0),
		Mailer: mailer, Now: w.clock, Log: quiet})
}

func (w *world) poolsOf(t *testing.T, taskID string) []models.TaskReviewPool {
	t.Helper()
	var rows []models.TaskReviewPool
	require.NoError(t, w.st.DB.Where("task_id = ?", taskID).Find(&rows).Error)
	return rows
}

// TestWaitingWorkIsToldOnceAndEscalated runs the notify pass on Postgres
// and on SQLite (the dev mode): a digest of the tasks waiting past the
// threshold reaches the pool's webhook (its signature verified) and a real
// SMTP server; a task past the escalation threshold moves to the target
// pool, audited; a second pass tells nothing again; a task that crosses the
// threshold later is told alone.
func TestWaitingWorkIsToldOnceAndEscalated(t *testing.T) {
	t.Parallel()
	for name, open := range map[string]func(testing.TB) *store.Store{"postgres": testkit.Schema, "sqlite": testkit.SQLite} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			w := newWorld(t, open(t))
			rc := newReceiver(t, w.secret, w.clock)
			require.NoError(t, w.st.DB.Model(&models.ReviewPool{}).Where("id = ?", w.front.ID).Update("notify_webhook_url", rc.URL).Error)
			sink := testkit.NewSMTPSink(t)
			mailer, err := notify.NewMailer(sink.URL, "appruntime@example.test")
			require.NoError(t, err)
			n := w.notifier(t, mailer)

			late := w.park(t, w.front, "Invoice 17 from ACME", 2*time.Minute)
			stuck := w.park(t, w.front, "Invoice 3 from Globex", 15*time.Minute)
			fresh := w.park(t, w.front, "Invoice 40 from Initech", 10*time.Second)

			r, err := n.Pass(context.Background())
			require.NoError(t, err)
			require.Equal(t, notify.PassResult{Escalated: 1, Digests: 2, Delivered: 2}, r)

			got, bad := rc.digests()
			require.Empty(t, bad)
			require.Len(t, got, 1)
			require.Equal(t, notify.EventType, got[0].Type)
			require.Equal(t, w.front.ID, got[0].PoolID)
			require.Len(t, got[0].Tasks, 1)
			require.Equal(t, late.ID, got[0].Tasks[0].TaskID)
			require.EqualValues(t, 120, got[0].Tasks[0].WaitingSeconds)

			mail := sink.Mail()
			require.Len(t, mail, 1)
			require.Equal(t, []string{"lead@example.test", "ops@example.test"}, mail[0].To)
			require.Contains(t, mail[0].Data, "Subject: [appruntime] 1 task(s) waiting in invoices")
			require.Contains(t, mail[0].Data, "Invoice 17 from ACME")
			require.NotContains(t, mail[0].Data, "Globex")

			rows := w.poolsOf(t, stuck.ID)
			require.Len(t, rows, 1)
			require.Equal(t, w.back.ID, rows[0].PoolID)
			require.NotNil(t, rows[0].RoutedAt)
			require.True(t, stuck.CreatedAt.Equal(rows[0].TaskCreatedAt), "the escalated row keeps the task's created_at (the task list's pool index)")
			var audits []models.AuditEntry
			require.NoError(t, w.st.DB.Where("action = ? AND target_id = ?", "review_pool.escalate", stuck.ID).Find(&audits).Error)
			require.Len(t, audits, 1)
			require.Equal(t, "system", audits[0].Actor)

			// The same waits are not told again, however often the pass runs.
			r, err = n.Pass(context.Background())
			require.NoError(t, err)
			require.Equal(t, notify.PassResult{}, r)
			got, _ = rc.digests()
			require.Len(t, got, 1)
			require.Len(t, sink.Mail(), 1)

			// A minute later the fresh task crossed the threshold: told alone.
			w.advance(time.Minute)
			r, err = n.Pass(context.Background())
			require.NoError(t, err)
			require.Equal(t, notify.PassResult{Digests: 2, Delivered: 2}, r)
			got, _ = rc.digests()
			require.Len(t, got, 2)
			require.Len(t, got[1].Tasks, 1)
			require.Equal(t, fresh.ID, got[1].Tasks[0].TaskID)
			require.Len(t, sink.Mail(), 2)
			require.Len(t, w.poolsOf(t, late.ID), 1, "a told task stays in its pool until it escalates")
		})
	}
}

// TestAFailedDigestIsRetriedFromItsRecord: a receiver's 500 leaves the
// digest owed with its next attempt's time in the database; a pass after
// that time delivers it, and nothing is sent twice.
func TestAFailedDigestIsRetriedFromItsRecord(t *testing.T) {
	t.Parallel()
	w := newWorld(t, testkit.Schema(t))
	rc := newReceiver(t, w.secret, w.clock, http.StatusInternalServerError)
	require.NoError(t, w.st.DB.Model(&models.ReviewPool{}).Where("id = ?", w.front.ID).
		Updates(map[string]any{"notify_webhook_url": rc.URL, "notify_emails": "", "escalate_after_seconds": nil, "escalate_to_pool_id": nil}).Error)
	n := w.notifier(t, nil)
	w.park(t, w.front, "Invoice 9", 5*time.Minute)

	r, err := n.Pass(context.Background())
	require.NoError(t, err)
	require.Equal(t, notify.PassResult{Digests: 1, Failed: 1}, r)
	var d models.ReviewPoolDigest
	require.NoError(t, w.st.DB.Where("pool_id = ?", w.front.ID).Take(&d).Error)
	require.Equal(t, 1, d.Attempt)
	require.Equal(t, http.StatusInternalServerError, d.StatusCode)
	require.NotNil(t, d.NextAttemptAt)
	require.True(t, d.NextAttemptAt.After(w.clock()))

	r, err = n.Pass(context.Background()) // not due yet
	require.NoError(t, err)
	require.Equal(t, notify.PassResult{}, r)

	w.advance(3 * time.Second) // past WebhookRetryDelay(0): 1 s plus up to half again
	r, err = n.Pass(context.Background())
	require.NoError(t, err)
	require.Equal(t, notify.PassResult{Delivered: 1}, r)
	var after models.ReviewPoolDigest // a fresh row: gorm leaves a pointer it reads NULL into as it was
	require.NoError(t, w.st.DB.Where("id = ?", d.ID).Take(&after).Error)
	d = after
	require.Equal(t, 2, d.Attempt)
	require.Nil(t, d.NextAttemptAt)
	require.NotNil(t, d.DeliveredAt)
	got, bad := rc.digests()
	require.Empty(t, bad)
	require.Len(t, got, 1)
	require.Equal(t, d.ID, got[0].ID)
}

// TestAClaimedTaskIsNotWaiting: a task a reviewer holds is neither told
// nor escalated; another workspace's pool is not read.
func TestAClaimedTaskIsNotWaiting(t *testing.T) {
	t.Parallel()
	st := testkit.Schema(t)
	w := newWorld(t, st)
	other := newWorld(t, st)
	rc := newReceiver(t, w.secret, w.clock)
	require.NoError(t, st.DB.Model(&models.ReviewPool{}).Where("id IN ?", []string{w.front.ID, other.front.ID}).
		Updates(map[string]any{"notify_webhook_url": rc.URL, "notify_emails": "", "notify_webhook_secret_enc": w.front.NotifyWebhookSecretEnc}).Error)
	held := w.park(t, w.front, "held", time.Hour)
	until := w.clock().Add(10 * time.Minute)
	require.NoError(t, st.DB.Model(&models.Task{}).Where("id = ?", held.ID).
		Updates(map[string]any{"claimed_by": w.tn.Admin.ID, "assigned_to": w.tn.Admin.ID, "claim_expires_at": until}).Error)
	theirs := other.park(t, other.front, "theirs", 2*time.Minute)

	r, err := w.notifier(t, nil).Pass(context.Background())
	require.NoError(t, err)
	require.Equal(t, notify.PassResult{Digests: 1, Delivered: 1}, r)
	got, _ := rc.digests()
	require.Len(t, got, 1)
	require.Equal(t, other.front.ID, got[0].PoolID, "each pool's digest lists its own tasks only")
	require.Equal(t, theirs.ID, got[0].Tasks[0].TaskID)
	require.Len(t, w.poolsOf(t, held.ID), 1)
	require.Equal(t, w.front.ID, w.poolsOf(t, held.ID)[0].PoolID)
	require.True(t, strings.HasPrefix(rc.URL, "http://127.0.0.1"))
}
