package e2e_test

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"testing"
	"time"

	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"
	"github.com/stretchr/testify/require"

	adminapi "github.com/appruntime/appruntime/internal/admin"
	"github.com/appruntime/appruntime/internal/limit"
	"github.com/appruntime/appruntime/internal/outbox"
	"github.com/appruntime/appruntime/internal/review"
	"github.com/appruntime/appruntime/internal/store"
	"github.com/appruntime/appruntime/internal/testkit"
	"github.com/appruntime/appruntime/internal/webhook"
	"github.com/appruntime/appruntime/models"
)

// signatureTolerance is the replay window the receiver applies, as an agent
// platform would.
const signatureTolerance = 5 * time.Minute

// invoiceBinding is the binding the admin saves: read and edit the
// invoices, and approve the review, which records a decision and releases
// the parked task.
var invoiceBinding = map[string]any{
	"reads": []any{map[string]any{
		"op": "list_invoices", "table": "invoices", "columns": []string{"id", "vendor", "amount", "status"},
		"filterable": []string{"vendor", "status"}, "order_by": []any{map[string]any{"column": "id"}}, "limit": 50,
	}},
	"writes": []any{
		map[string]any{"op": "set_status", "table": "invoices", "mode": "update", "key_columns": []string{"id"}, "columns": []string{"status"}},
		map[string]any{"op": "record_decision", "table": "decisions", "mode": "insert", "columns": []string{"decision", "note"},
			"fixed_values": map[string]any{"task_id": "{{task_id}}"}},
	},
	"actions": []any{map[string]any{
		"name": "approve_invoice", "writes": []string{"record_decision"}, "feed_event": "invoice_approved", "resolves_await": true,
	}},
}

// bundleHTML is the bundle the admin uploads; the test plays its part.
const bundleHTML = `<!doctype html><meta charset="utf-8"><title>Invoice review</title><p>Review the invoices.</p>`

// story is everything the admin set up and the agent built, by id, with the
// credentials each caller holds.
type story struct {
	adminToken, agentToken, hostToken string
	webhookSecret, oldWebhookSecret   string
	workspaceID, agentID              string
	dataSource                        *store.Store
	taskID, stepID, awaitID           string
	sessionToken                      string
}

// setUp plays the operator (the workspace, as `appruntime workspace create`
// makes it), the admin (reviewer, agent with its webhook, tokens, data
// source, binding, bundle, configured tool), the agent (a task and an
// app-tool step that parks it) and the host (a session on the step), all
// but the operator over HTTP.
func setUp(t *testing.T, s *stack, hook *receiver) *story {
	t.Helper()
	st := &story{}
	ws, err := s.P.Admin.CreateWorkspace(context.Background(), "operator", adminapi.WorkspaceInput{Name: "Invoices e2e"})
	require.NoError(t, err)
	st.workspaceID, st.adminToken = ws.ID, ws.AdminToken
	admin := st.adminToken
	s.must(t, 403, "POST", "/api/admin/workspaces", admin, map[string]any{"name": "Another"})

	user := s.must(t, 201, "POST", "/api/admin/users", admin, map[string]any{
		"email": "reviewer-" + models.NewID()[:8] + "@example.test", "name": "Reviewer", "role": "reviewer", "password": "correct horse battery",
	})
	agent := s.must(t, 201, "POST", "/api/admin/agents", admin, map[string]any{"name": "Invoice agent", "resume_webhook_url": hook.URL})
	st.agentID, st.oldWebhookSecret = agent["id"].(string), agent["webhook_secret"].(string)
	require.Equal(t, hook.URL, agent["resume_webhook_url"])
	rotated := s.must(t, 200, "POST", "/api/admin/agents/"+st.agentID+"/webhook-secret/rotate", admin, nil)
	st.webhookSecret = rotated["webhook_secret"].(string)
	require.NotEqual(t, st.oldWebhookSecret, st.webhookSecret)

	st.hostToken = s.must(t, 201, "POST", "/api/admin/tokens", admin, map[string]any{
		"scope": "host", "name": "review host", "user_id": user["id"]})["token"].(string)
	st.agentToken = s.must(t, 201, "POST", "/api/admin/tokens", admin, map[string]any{
		"scope": "agent", "name": "agent platform", "agent_id": st.agentID})["token"].(string)

	st.dataSource = testkit.DataSource(t)
	for _, q := range []string{
		`CREATE TABLE invoices (id integer PRIMARY KEY, vendor text NOT NULL, amount numeric(12,2) NOT NULL, status text NOT NULL)`,
		`CREATE TABLE decisions (id serial PRIMARY KEY, task_id text NOT NULL, decision text NOT NULL, note text)`,
		`INSERT INTO invoices VALUES (1, 'ACME Corp', 1250.00, 'pending'), (2, 'ACME Corp', 89.90, 'pending'), (3, 'Globex', 4310.50, 'pending')`,
	} {
		require.NoError(t, st.dataSource.DB.Exec(q).Error)
	}
	integ := s.must(t, 201, "POST", "/api/admin/integrations", admin, map[string]any{
		"name": "Invoices database", "kind": "postgres", "secrets": map[string]any{"dsn": testkit.URLOf(st.dataSource)},
	})
	require.Equal(t, []any{"dsn"}, integ["secrets_set"], "the secret is stored, never shown")

	b := s.must(t, 201, "POST", "/api/admin/bindings", admin, map[string]any{
		"name": "Invoice review", "binding_kind": "postgres", "integration_id": integ["id"], "allowed_operations": invoiceBinding,
	})
	require.EqualValues(t, 1, b["version"])

	bundle := s.must(t, 201, "POST", "/api/admin/bundles?name=invoice-review", admin, []byte(bundleHTML), "text/html")
	tool := s.must(t, 201, "POST", "/api/admin/configured-tools", admin, map[string]any{
		"agent_id": st.agentID, "display_name": "Invoice review", "base_tool": "app_tool",
		"bundle_id": bundle["id"], "binding_id": b["id"], "await_review": true,
		"input_schema": map[string]any{"type": "object", "properties": map[string]any{"report_id": map[string]any{"type": "integer"}},
			"required": []string{"report_id"}, "additionalProperties": false},
	})

	task := s.must(t, 201, "POST", "/api/agent/tasks", st.agentToken, map[string]any{"title": "Review the ACME invoices"})
	st.taskID = task["id"].(string)
	require.Equal(t, models.TaskRunning, task["status"])
	step := s.must(t, 201, "POST", "/api/agent/tasks/"+st.taskID+"/steps", st.agentToken, map[string]any{
		"configured_tool_id": tool["id"], "params": map[string]any{"report_id": 59137},
	})
	st.stepID = step["id"].(string)
	artifact := step["output"].(map[string]any)
	st.awaitID, _ = artifact["await_id"].(string)
	require.NotEmpty(t, st.awaitID, "await_review parks the task on an await: %v", artifact)
	require.Equal(t, bundle["sha256"], artifact["bundle_sha"])
	require.Equal(t, map[string]any{"report_id": float64(59137)}, artifact["params"])
	require.Equal(t, models.TaskWaitingForInput, taskStatus(t, s, st))

	d := s.must(t, 201, "POST", "/api/app-tools/sessions", st.hostToken, map[string]any{"step_id": st.stepID})
	require.Equal(t, st.awaitID, d["await_id"])
	require.Equal(t, true, d["await_pending"])
	require.Equal(t, bundle["url"], d["bundle_url"])
	st.sessionToken = d["session_token"].(string)
	return st
}

// verb calls a runtime verb as the bundle does, with the session token.
func (st *story) verb(t *testing.T, s *stack, verb, op string, payload any) reply {
	t.Helper()
	return s.call(t, "POST", "/api/app-runtime/"+verb, st.sessionToken, map[string]any{"op": op, "payload": payload})
}

// approvePayload is what the bundle sends to approve the review.
var approvePayload = map[string]any{
	"rows": map[string]any{"record_decision": map[string]any{"decision": "approved", "note": "amounts match the POs"}},
}

// approve runs the action that releases the await.
func (st *story) approve(t *testing.T, s *stack) reply {
	t.Helper()
	return st.verb(t, s, "action", "approve_invoice", approvePayload)
}

// taskStatus reads the task as the agent platform does.
func taskStatus(t *testing.T, s *stack, st *story) string {
	t.Helper()
	return s.must(t, 200, "GET", "/api/agent/tasks/"+st.taskID, st.agentToken, nil)["status"].(string)
}

// events reads the task's feed from the agent's pull endpoint.
func events(t *testing.T, s *stack, st *story) []map[string]any {
	t.Helper()
	page := s.must(t, 200, "GET", "/api/agent/tasks/"+st.taskID+"/events?after=0", st.agentToken, nil)
	var out []map[string]any
	for _, e := range page["events"].([]any) {
		out = append(out, e.(map[string]any))
	}
	return out
}

// eventsOfType keeps the events of one type.
func eventsOfType(all []map[string]any, typ string) []map[string]any {
	var out []map[string]any
	for _, e := range all {
		if e["type"] == typ {
			out = append(out, e)
		}
	}
	return out
}

// checkResumeWebhook checks the one delivery the receiver got: signed the
// Standard Webhooks way with the agent's current secret and, during the
// rotation's overlap, the replaced one; the legacy headers with the current
// one only; naming the task, step and await, and the same event the pull
// endpoint shows.
func checkResumeWebhook(t *testing.T, st *story, got []delivery, resumed map[string]any) {
	t.Helper()
	require.Len(t, got, 1, "exactly one webhook delivery")
	d := got[0]
	// The receiver verifies with the Standard Webhooks library, with either
	// secret during the rotation's overlap.
	for _, secret := range []string{st.webhookSecret, st.oldWebhookSecret} {
		wh, err := standardwebhooks.NewWebhook(secret)
		require.NoError(t, err)
		require.NoError(t, wh.Verify(d.Body, d.Header))
		tampered := append([]byte(nil), d.Body...)
		tampered[len(tampered)-2] = ' '
		require.ErrorIs(t, wh.Verify(tampered, d.Header), standardwebhooks.ErrNoMatchingSignature)
	}
	// The legacy headers of the transition release carry the current key's signature only.
	current, err := webhook.ParseSecret(st.webhookSecret)
	require.NoError(t, err)
	old, err := webhook.ParseSecret(st.oldWebhookSecret)
	require.NoError(t, err)
	require.NoError(t, webhook.VerifyLegacy(current.Key(), d.Header, d.Body, signatureTolerance))
	require.ErrorIs(t, webhook.VerifyLegacy(old.Key(), d.Header, d.Body, signatureTolerance), webhook.ErrBadSignature)
	require.Equal(t, d.Header.Get(webhook.HeaderID), d.Header.Get(webhook.LegacyHeaderEventID))

	var ev review.ResumeEvent
	require.NoError(t, json.Unmarshal(d.Body, &ev))
	require.Equal(t, review.ResumeEventType, ev.Type)
	require.Equal(t, st.taskID, ev.TaskID)
	require.Equal(t, st.awaitID, ev.AwaitID)
	require.Equal(t, st.stepID, ev.StepID)
	require.Equal(t, st.agentID, ev.AgentID)
	require.Equal(t, st.workspaceID, ev.WorkspaceID)
	require.Equal(t, "approve_invoice", ev.Action)
	require.Equal(t, ev.ID, d.Header.Get(webhook.LegacyHeaderEventID))
	require.Equal(t, "application/json", d.Header.Get("Content-Type"))

	payload := resumed["payload"].(map[string]any)
	require.Equal(t, ev.ID, payload["id"], "the pull endpoint shows the same event")
	require.Equal(t, st.awaitID, payload["await_id"])
	require.Equal(t, st.stepID, resumed["step_id"])
}

// resumeOutboxRows counts the resume events written for the story's await,
// and how many of them the relay has not moved yet. The schema is the
// test's own, so every outbox row belongs to this story.
func resumeOutboxRows(t *testing.T, s *stack, st *story) (total, unsent int) {
	t.Helper()
	var rows []models.Outbox
	require.NoError(t, s.Store.DB.Where("kind = ?", outbox.KindResumeEvent).Find(&rows).Error)
	for _, row := range rows {
		var p review.ResumePayload
		require.NoError(t, row.Payload.Decode(&p))
		require.Equal(t, st.awaitID, p.AwaitID)
		total++
		if row.SentAt == nil {
			unsent++
		}
	}
	return total, unsent
}

func webhookDeliveryRows(t *testing.T, s *stack, st *story) int64 {
	t.Helper()
	var n int64
	require.NoError(t, s.Store.DB.Model(&models.WebhookDelivery{}).Where("task_id = ?", st.taskID).Count(&n).Error)
	return n
}

func TestReviewStoryFromArtifactToSignedResumeWebhook(t *testing.T) {
	t.Parallel()
	s := newStack(t)
	startWorker(t, s.P)
	hook := newReceiver(t)
	st := setUp(t, s, hook)

	// The bundle reads, edits one invoice, and approves.
	r := st.verb(t, s, "read", "list_invoices", map[string]any{"filters": map[string]any{"vendor": "ACME Corp"}})
	require.Equal(t, 200, r.Status, string(r.Raw))
	require.Equal(t, "rows", r.Body["kind"])
	require.Equal(t, []any{"id", "vendor", "amount", "status"}, r.Body["columns"])
	require.EqualValues(t, 2, r.Body["row_count"])
	require.Equal(t, []any{float64(1), "ACME Corp", 1250.0, "pending"}, r.Body["rows"].([]any)[0])

	r = st.verb(t, s, "write", "set_status", map[string]any{"row": map[string]any{"id": 2, "status": "on_hold"}})
	require.Equal(t, 200, r.Status, string(r.Raw))
	require.Equal(t, map[string]any{"rows_affected": float64(1)}, r.Body)
	var status string
	require.NoError(t, st.dataSource.DB.Raw("SELECT status FROM invoices WHERE id = 2").Scan(&status).Error)
	require.Equal(t, "on_hold", status, "the write reached the customer's table")

	r = st.approve(t, s)
	require.Equal(t, 200, r.Status, string(r.Raw))
	require.Equal(t, true, r.Body["ok"])
	require.Equal(t, map[string]any{"record_decision": float64(1), "await_resolved": true}, r.Body["results"])
	var decisions []struct{ TaskID, Decision string }
	require.NoError(t, st.dataSource.DB.Raw("SELECT task_id, decision FROM decisions").Scan(&decisions).Error)
	require.Equal(t, []struct{ TaskID, Decision string }{{st.taskID, "approved"}}, decisions,
		"the decision carries the session's task id, which the bundle never sent")

	// The agent platform sees the task running again, one signed webhook,
	// and the event on the pull endpoint.
	require.Eventually(t, func() bool { return taskStatus(t, s, st) == models.TaskRunning }, eventually, poll,
		"the task runs again once the resume event is carried out")
	got := hook.waitOne(t)
	all := events(t, s, st)
	types := make([]string, 0, len(all))
	for _, e := range all {
		types = append(types, e["type"].(string))
	}
	require.Equal(t, []string{models.FeedArtifact, models.FeedAgentAction, models.FeedAgentAction, models.FeedTaskResumed}, types)
	require.Equal(t, "invoice_approved", all[2]["name"], "the action's feed event")
	checkResumeWebhook(t, st, got, all[3])
	require.EqualValues(t, 1, webhookDeliveryRows(t, s, st))

	// The released await cannot be released again, and the step's session
	// may read but no longer write.
	r = st.approve(t, s)
	require.Equal(t, 409, r.Status, string(r.Raw))
	r = st.verb(t, s, "write", "set_status", map[string]any{"row": map[string]any{"id": 1, "status": "on_hold"}})
	require.Equal(t, 409, r.Status, string(r.Raw))
	r = st.verb(t, s, "read", "list_invoices", map[string]any{})
	require.Equal(t, 200, r.Status, string(r.Raw))
	page := s.must(t, 200, "GET", fmt.Sprintf("/api/agent/tasks/%s/events?after=%v", st.taskID, all[3]["id"]), st.agentToken, nil)
	require.Empty(t, page["events"], "nothing was written after the release")
}

func TestFiftyConcurrentApprovalsReleaseTheAwaitOnceAndDeliverOneWebhook(t *testing.T) {
	t.Parallel()
	s := newStack(t)
	startWorker(t, s.P)
	hook := newReceiver(t)
	st := setUp(t, s, hook)
	// Every call must reach the race, not the per-surface rate limit.
	s.P.Limiter.SetRate(limit.Rate{PerSecond: 10000, Burst: 10000})

	const callers = 50
	var wg sync.WaitGroup
	start := make(chan struct{})
	replies := make([]reply, callers)
	errs := make([]error, callers)
	body := map[string]any{"op": "approve_invoice", "payload": approvePayload}
	for i := range callers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			replies[i], errs[i] = s.send("POST", "/api/app-runtime/action", st.sessionToken, body)
		}()
	}
	close(start)
	wg.Wait()
	resolved := 0
	for i, r := range replies {
		require.NoError(t, errs[i])
		if r.Status == 409 {
			continue // the await was already settled: nothing written
		}
		require.Equal(t, 200, r.Status, string(r.Raw))
		require.Equal(t, true, r.Body["results"].(map[string]any)["await_resolved"])
		resolved++
	}
	require.Equal(t, 1, resolved, "exactly one call released the await, the others were refused")
	var decisions int64
	require.NoError(t, st.dataSource.DB.Raw("SELECT count(*) FROM decisions").Scan(&decisions).Error)
	require.EqualValues(t, 1, decisions, "one approval, one set of writes")
	total, _ := resumeOutboxRows(t, s, st)
	require.EqualValues(t, 1, total, "one resume event in the outbox")

	require.Eventually(t, func() bool { return taskStatus(t, s, st) == models.TaskRunning }, eventually, poll)
	got := hook.waitOne(t)
	resumed := eventsOfType(events(t, s, st), models.FeedTaskResumed)
	require.Len(t, resumed, 1, "one task_resumed event")
	checkResumeWebhook(t, st, got, resumed[0])
	require.EqualValues(t, 1, webhookDeliveryRows(t, s, st), "one delivery attempt recorded")
	require.Len(t, eventsOfType(events(t, s, st), models.FeedAgentAction), 1, "only the approval that released recorded a feed row")
}

func TestResumeEventCommittedWhileTheRelayIsDownIsDeliveredOnceWhenItComesBack(t *testing.T) {
	t.Parallel()
	s := newStack(t)
	hook := newReceiver(t)
	st := setUp(t, s, hook)

	// No worker runs: the release commits with its outbox row, and nothing
	// moves it to the queue (a relay that died between commit and enqueue).
	r := st.approve(t, s)
	require.Equal(t, 200, r.Status, string(r.Raw))
	require.Equal(t, true, r.Body["results"].(map[string]any)["await_resolved"])
	time.Sleep(time.Second)
	total, unsent := resumeOutboxRows(t, s, st)
	require.EqualValues(t, 1, total)
	require.EqualValues(t, 1, unsent, "the event waits in the outbox")
	require.Equal(t, models.TaskWaitingForInput, taskStatus(t, s, st), "nothing resumed the task")
	require.Empty(t, hook.deliveries())
	require.Empty(t, eventsOfType(events(t, s, st), models.FeedTaskResumed))

	// Two workers (two processes' platforms) come up at once: both relays
	// see the row, and the event is still carried out once.
	startWorker(t, s.P)
	startWorker(t, s.newPlatform(t))
	require.Eventually(t, func() bool { return taskStatus(t, s, st) == models.TaskRunning }, eventually, poll)
	got := hook.waitOne(t)
	resumed := eventsOfType(events(t, s, st), models.FeedTaskResumed)
	require.Len(t, resumed, 1, "one task_resumed event")
	checkResumeWebhook(t, st, got, resumed[0])
	require.EqualValues(t, 1, webhookDeliveryRows(t, s, st))
	_, unsent = resumeOutboxRows(t, s, st)
	require.EqualValues(t, 0, unsent, "the relay marked the row sent")
}
