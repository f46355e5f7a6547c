package api_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/appruntime/appruntime/internal/admin"
	"github.com/appruntime/appruntime/internal/binding"
	"github.com/appruntime/appruntime/internal/bindingspec"
	"github.com/appruntime/appruntime/internal/config"
	"github.com/appruntime/appruntime/internal/limit"
	"github.com/appruntime/appruntime/internal/store"
	"github.com/appruntime/appruntime/internal/testkit"
	"github.com/appruntime/appruntime/models"
)

func TestReadPagesWithTheSameShapeInBothEnvelopes(t *testing.T) {
	t.Parallel()
	f := newRuntimeFixture(t)

	r := f.verb(t, "read", map[string]any{"op": "list_invoices"})
	require.Equal(t, 200, r.Status, string(r.Raw))
	require.Equal(t, "rows", r.Body["kind"])
	require.Equal(t, []any{"id", "vendor", "amount", "status"}, r.Body["columns"])
	require.Equal(t, float64(2), r.Body["row_count"], "the op's limit is 2 rows a page")
	require.Equal(t, []any{float64(1), "ACME", 10.5, "pending"}, r.Body["rows"].([]any)[0])
	cursor, ok := r.Body["next_cursor"].(string)
	require.True(t, ok, "a next page exists: %s", r.Raw)

	r = f.verb(t, "read", map[string]any{"op": "list_invoices", "payload": map[string]any{"cursor": cursor}})
	require.Equal(t, 200, r.Status, string(r.Raw))
	require.Equal(t, float64(1), r.Body["row_count"])
	require.Nil(t, r.Body["next_cursor"])

	v2 := f.verb(t, "read", map[string]any{"op": "list_invoices", "payload": map[string]any{
		"columns": []string{"id", "vendor"}, "filters": map[string]any{"vendor": "Globex"}}}, "X-Nanonets-App-Runtime", "v2")
	require.Equal(t, 200, v2.Status, string(v2.Raw))
	require.Equal(t, true, v2.Body["ok"])
	require.Equal(t, "rows", v2.Body["kind"])
	result := v2.Body["result"].(map[string]any)
	require.Equal(t, []any{"id", "vendor"}, result["columns"])
	require.Equal(t, []any{[]any{float64(3), "Globex"}}, result["rows"])
	require.Equal(t, "rows", result["kind"], "v2's result is exactly the v1 object")
}

func TestWriteChangesOneRowAndRecordsOneFeedRow(t *testing.T) {
	t.Parallel()
	f := newRuntimeFixture(t)

	r := f.verb(t, "write", map[string]any{"op": "set_status", "payload": map[string]any{"row": map[string]any{"id": 2, "status": "on_hold"}}})
	require.Equal(t, 200, r.Status, string(r.Raw))
	require.Equal(t, map[string]any{"rows_affected": float64(1)}, r.Body)

	var status string
	require.NoError(t, f.source.DB.Raw("SELECT status FROM invoices WHERE id = 2").Scan(&status).Error)
	require.Equal(t, "on_hold", status)

	// The feed row is committed just after the reply (docs/architecture.md#the-write-guarantee).
	var feed []models.FeedEvent
	require.Eventually(t, func() bool {
		return f.db().Where("task_id = ?", f.taskID).Find(&feed).Error == nil && len(feed) == 1
	}, 10*time.Second, 10*time.Millisecond)
	require.Equal(t, models.FeedAgentAction, feed[0].Type)
	require.Equal(t, "set_status", feed[0].Name)
	require.Equal(t, f.stepID, *feed[0].StepID)
	require.Equal(t, "user:"+f.tenant.Admin.ID, feed[0].Actor, "the host minted for its user")

	v2 := f.verb(t, "write", map[string]any{"op": "set_status", "payload": map[string]any{"row": map[string]any{"id": 99, "status": "x"}}},
		"X-Nanonets-App-Runtime", "v2")
	require.Equal(t, 200, v2.Status)
	require.Equal(t, map[string]any{"ok": true, "kind": "write", "result": map[string]any{"rows_affected": float64(0)}}, v2.Body)
}

func TestActionReleasesTheAwaitOnceWithItsOutboxRow(t *testing.T) {
	t.Parallel()
	f := newRuntimeFixture(t)

	r := f.verb(t, "action", map[string]any{"op": "approve", "payload": map[string]any{"rows": map[string]any{"record_decision": map[string]any{"decision": "approved"}}}})
	require.Equal(t, 200, r.Status, string(r.Raw))
	require.Equal(t, map[string]any{"ok": true, "results": map[string]any{"record_decision": float64(1), "await_resolved": true},
		"responses": map[string]any{}}, r.Body)

	var decision struct{ TaskID, Decision string }
	require.NoError(t, f.source.DB.Raw("SELECT task_id, decision FROM decisions").Scan(&decision).Error)
	require.Equal(t, f.taskID, decision.TaskID, "fixed values come from the session, not the request")
	require.Equal(t, "approved", decision.Decision)

	var aw models.TaskAwait
	require.NoError(t, f.db().Take(&aw, "id = ?", f.awaitID).Error)
	require.Equal(t, models.AwaitResolved, aw.Status)
	var outbox []models.Outbox
	require.NoError(t, f.db().Find(&outbox).Error)
	require.Len(t, outbox, 1)
	require.Equal(t, "resume_event", outbox[0].Kind)
	var feed models.FeedEvent
	require.NoError(t, f.db().Take(&feed, "task_id = ?", f.taskID).Error)
	require.Equal(t, "invoice_approved", feed.Name)

	again := f.verb(t, "action", approveBody("approved again"), "X-Nanonets-App-Runtime", "v2")
	require.Equal(t, 409, again.Status, string(again.Raw))
	require.Equal(t, false, again.Body["ok"])
	require.NoError(t, f.db().Find(&outbox).Error)
	require.Len(t, outbox, 1, "a released await is released once")
	f.requireWrites(t, 1, 1)
}

// requireWrites checks the decision rows in the data source and the
// agent_action feed rows of the fixture's task.
func (f *runtimeFixture) requireWrites(t *testing.T, decisions, feedRows int64) {
	t.Helper()
	var n int64
	require.NoError(t, f.source.DB.Raw("SELECT count(*) FROM decisions").Scan(&n).Error)
	require.Equal(t, decisions, n, "decision rows in the data source")
	require.NoError(t, f.db().Model(&models.FeedEvent{}).Where("task_id = ? AND type = ?", f.taskID, models.FeedAgentAction).Count(&n).Error)
	require.Equal(t, feedRows, n, "agent_action feed rows")
	require.Eventually(t, func() bool {
		require.NoError(t, f.db().Model(&models.WriteIntentBatch{}).Count(&n).Error)
		return n == 0
	}, 5*time.Second, 10*time.Millisecond, "no write intent is left behind")
}

func TestFiftyConcurrentActionsReleaseTheAwaitExactlyOnce(t *testing.T) {
	t.Parallel()
	f := newRuntimeFixture(t)
	generousRate(f.api) // all fifty must reach the race, not the rate limit

	const n = 50
	var wg sync.WaitGroup
	results := make(chan response, n)
	for range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			results <- f.verb(t, "action", approveBody("approved"))
		}()
	}
	wg.Wait()
	close(results)
	released, refused := 0, 0
	for r := range results {
		switch r.Status {
		case 200:
			require.Equal(t, true, r.Body["results"].(map[string]any)["await_resolved"], string(r.Raw))
			released++
		case 409:
			refused++
		default:
			t.Fatalf("unexpected reply %d: %s", r.Status, r.Raw)
		}
	}
	require.Equal(t, 1, released)
	require.Equal(t, n-1, refused, "every other approval is refused")
	var outbox int64
	require.NoError(t, f.db().Model(&models.Outbox{}).Where("kind = ?", "resume_event").Count(&outbox).Error)
	require.Equal(t, int64(1), outbox)
	f.requireWrites(t, 1, 1) // one approval, one set of writes
}

func TestAfterTheAwaitResolvesTheStepsSessionsReadButNoLongerWriteOrAct(t *testing.T) {
	t.Parallel()
	f := newRuntimeFixture(t)
	generousRate(f.api)
	read := map[string]any{"op": "list_invoices", "payload": map[string]any{}}
	write := map[string]any{"op": "set_status", "payload": map[string]any{"row": map[string]any{"id": 1, "status": "on_hold"}}}
	note := map[string]any{"op": "note_only", "payload": map[string]any{"rows": map[string]any{"record_decision": map[string]any{"decision": "n"}}}}

	r := f.verb(t, "write", write)
	require.Equal(t, 200, r.Status, "before the release the step writes: %s", r.Raw)
	r = f.verb(t, "action", approveBody("approved"))
	require.Equal(t, 200, r.Status, string(r.Raw))
	var names []string
	require.NoError(t, f.db().Model(&models.FeedEvent{}).Where("task_id = ?", f.taskID).Order("id").Pluck("name", &names).Error)
	require.Equal(t, []string{"set_status", "invoice_approved"}, names, "the write comes before the approval in the feed")

	later := f.mint(t, f.stepID) // a session minted after the release is bound the same way
	for _, token := range []string{f.token, later} {
		r := f.api.call(t, "POST", "/api/app-runtime/read", token, read)
		require.Equal(t, 200, r.Status, "reads go on: %s", r.Raw)
		for verb, body := range map[string]any{"write": write, "action": note} {
			r := f.api.call(t, "POST", "/api/app-runtime/"+verb, token, body)
			require.Equal(t, 409, r.Status, "/%s after the release: %s", verb, r.Raw)
			require.Contains(t, r.Body["error"], "no longer write or act")
		}
	}
	f.requireWrites(t, 1, 2) // the first write and the approval, nothing after

	// An await an admin aborted settles the step the same way.
	_, otherStep, otherAwait := f.parkedStep(t)
	other := f.mint(t, otherStep)
	_, err := f.api.P.Parked.Abort(context.Background(), f.tenant.Workspace.ID, otherAwait, "admin", "the other step is abandoned")
	require.NoError(t, err)
	r = f.api.call(t, "POST", "/api/app-runtime/write", other, write)
	require.Equal(t, 409, r.Status, string(r.Raw))
}

func TestRevokingAHostTokenOrDeletingAUserEndsTheirSessionsOnEveryReplica(t *testing.T) {
	t.Parallel()
	f := newRuntimeFixture(t)
	other := newTestAPIOn(t, f.api.Store, f.api.Redis) // a second API process on the same database and Redis
	read := map[string]any{"op": "list_invoices", "payload": map[string]any{}}
	ctx := context.Background()

	// A reviewer with a host token of their own, minting on the step.
	reviewer, err := f.api.P.Admin.CreateUser(ctx, f.tenant.Workspace.ID, "test",
		admin.UserInput{Email: "rev-" + models.NewID()[:8] + "@example.test", Role: models.RoleReviewer, Password: "long enough pw"})
	require.NoError(t, err)
	host, err := f.api.P.Admin.IssueToken(ctx, f.tenant.Workspace.ID, "test",
		admin.TokenInput{Scope: models.ScopeHost, UserID: &reviewer.ID})
	require.NoError(t, err)
	mint := func(hostToken string) string {
		r := f.api.call(t, "POST", "/api/app-tools/sessions", hostToken, map[string]string{"step_id": f.stepID})
		require.Equal(t, 201, r.Status, string(r.Raw))
		return r.Body["session_token"].(string)
	}

	cases := []struct {
		name   string
		token  string
		revoke func()
	}{
		{"host token revoked", f.token, func() {
			var tok models.APIToken
			require.NoError(t, f.db().Where("workspace_id = ? AND scope = ? AND user_id = ?", f.tenant.Workspace.ID,
				models.ScopeHost, f.tenant.Admin.ID).Take(&tok).Error)
			r := f.api.call(t, "DELETE", "/api/admin/tokens/"+tok.ID, f.tenant.AdminToken, nil)
			require.Equal(t, 204, r.Status, string(r.Raw))
		}},
		{"user deleted", mint(host.Token), func() {
			r := f.api.call(t, "DELETE", "/api/admin/users/"+reviewer.ID, f.tenant.AdminToken, nil)
			require.Equal(t, 204, r.Status, string(r.Raw))
		}},
	}
	for _, c := range cases {
		r := other.call(t, "POST", "/api/app-runtime/read", c.token, read)
		require.Equal(t, 200, r.Status, "%s: before: %s", c.name, r.Raw)
		c.revoke()
		for _, replica := range []*testAPI{f.api, other} {
			r := replica.call(t, "POST", "/api/app-runtime/read", c.token, read)
			require.Equal(t, 401, r.Status, "%s: the next call on any replica: %s", c.name, r.Raw)
		}
	}
}

func TestASessionCannotReleaseAnotherStepsAwait(t *testing.T) {
	t.Parallel()
	f := newRuntimeFixture(t)
	generousRate(f.api)
	_, otherStep, otherAwait := f.parkedStep(t)
	otherToken := f.mint(t, otherStep)

	// Naming this step's await with the other step's token is refused.
	body := approveBody("approved")
	body["await_id"] = f.awaitID
	r := f.api.call(t, "POST", "/api/app-runtime/action", otherToken, body)
	require.Equal(t, 401, r.Status, string(r.Raw))
	require.Contains(t, r.Body["error"], "does not hold await")

	// Without naming it, the other token releases its own await only.
	r = f.api.call(t, "POST", "/api/app-runtime/action", otherToken, approveBody("approved"))
	require.Equal(t, 200, r.Status, string(r.Raw))
	var mine, theirs models.TaskAwait
	require.NoError(t, f.db().Take(&mine, "id = ?", f.awaitID).Error)
	require.NoError(t, f.db().Take(&theirs, "id = ?", otherAwait).Error)
	require.Equal(t, models.AwaitPending, mine.Status)
	require.Equal(t, models.AwaitResolved, theirs.Status)
}

func TestActionWithAFailingUpstreamRollsBackAndRecordsNothing(t *testing.T) {
	t.Parallel()
	upstream := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/ok" {
			_, _ = w.Write([]byte(`{"exported":true}`))
			return
		}
		w.WriteHeader(409)
		_, _ = w.Write([]byte("export refused"))
	}))
	t.Cleanup(upstream.Close)
	f := newRuntimeFixture(t) // the platform's gateway; the test configuration allows loopback

	spec := fixtureSpec()
	spec.HTTPCalls = []bindingspec.HTTPCall{
		{Op: "export_ok", Method: "POST", URL: upstream.URL + "/ok"},
		{Op: "export_refused", Method: "POST", URL: upstream.URL + "/refused"},
	}
	spec.Actions = append(spec.Actions,
		bindingspec.Action{Name: "export_then_approve", Writes: []string{"record_decision"}, HTTPCalls: []string{"export_ok", "export_refused"}, ResolvesAwait: true},
		bindingspec.Action{Name: "export", Writes: []string{"record_decision"}, HTTPCalls: []string{"export_ok"}})
	f.saveSpec(t, spec)

	r := f.verb(t, "action", map[string]any{"op": "export_then_approve", "payload": map[string]any{"rows": map[string]any{"record_decision": map[string]any{"decision": "x"}}}})
	require.Equal(t, 502, r.Status, string(r.Raw))
	require.Equal(t, float64(409), r.Body["results"].(map[string]any)["export_refused"])
	require.Equal(t, map[string]any{"status": float64(409), "text": "export refused"}, r.Body["responses"].(map[string]any)["export_refused"])
	var decisions, feed int64
	require.NoError(t, f.source.DB.Raw("SELECT count(*) FROM decisions").Scan(&decisions).Error)
	require.Zero(t, decisions, "the writes were rolled back")
	require.NoError(t, f.db().Model(&models.FeedEvent{}).Count(&feed).Error)
	require.Zero(t, feed)
	var aw models.TaskAwait
	require.NoError(t, f.db().Take(&aw, "id = ?", f.awaitID).Error)
	require.Equal(t, models.AwaitPending, aw.Status)

	r = f.verb(t, "action", map[string]any{"op": "export", "payload": map[string]any{"rows": map[string]any{"record_decision": map[string]any{"decision": "y"}}}})
	require.Equal(t, 200, r.Status, string(r.Raw))
	require.Equal(t, float64(200), r.Body["results"].(map[string]any)["export_ok"])
	require.Equal(t, map[string]any{"status": float64(200), "body": map[string]any{"exported": true}}, r.Body["responses"].(map[string]any)["export_ok"])
	require.NoError(t, f.source.DB.Raw("SELECT count(*) FROM decisions").Scan(&decisions).Error)
	require.Equal(t, int64(1), decisions)
}

// approveBody is an /action body for the fixture's approve action.
func approveBody(decision string) map[string]any {
	return map[string]any{"op": "approve", "payload": map[string]any{"rows": map[string]any{"record_decision": map[string]any{"decision": decision}}}}
}

// saveSpec replaces the fixture binding's operations through the service.
func (f *runtimeFixture) saveSpec(t *testing.T, spec bindingspec.Spec) {
	t.Helper()
	raw, err := json.Marshal(spec)
	require.NoError(t, err)
	_, err = f.api.P.Bindings.Update(context.Background(), f.tenant.Workspace.ID, f.bindingID, "test", binding.Patch{AllowedOperations: raw})
	require.NoError(t, err)
}

func TestASaveOnOneReplicaIsEnforcedByTheOtherOnItsNextCall(t *testing.T) {
	t.Parallel()
	f := newRuntimeFixture(t)
	other := newTestAPIOn(t, f.api.Store, f.api.Redis) // a second API process on the same database and Redis

	read := map[string]any{"op": "list_invoices", "payload": map[string]any{"columns": []string{"id", "amount"}}}
	r := other.call(t, "POST", "/api/app-runtime/read", f.token, read)
	require.Equal(t, 200, r.Status, string(r.Raw))

	spec := fixtureSpec()
	spec.Reads[0].Columns = []string{"id", "vendor", "status"} // amount is no longer readable
	raw, err := json.Marshal(map[string]any{"allowed_operations": spec})
	require.NoError(t, err)
	saved := f.api.call(t, "PATCH", "/api/admin/bindings/"+f.bindingID, f.tenant.AdminToken, raw)
	require.Equal(t, 200, saved.Status, string(saved.Raw))

	r = other.call(t, "POST", "/api/app-runtime/read", f.token, read)
	require.Equal(t, 403, r.Status, string(r.Raw))
	require.Equal(t, `column "amount" is not readable through op "list_invoices"`, r.Body["error"])
}

func TestStatusMatrixInBothEnvelopes(t *testing.T) {
	t.Parallel()
	blocked := make(chan struct{})
	upstream := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		<-blocked
		_, _ = w.Write([]byte(`{}`))
	}))
	t.Cleanup(func() { close(blocked); upstream.Close() })

	f := newRuntimeFixture(t, func(c *config.Config) { c.LookupConcurrency = 1; c.LookupWait = 50 * time.Millisecond })
	spec := fixtureSpec()
	spec.HTTPCalls = []bindingspec.HTTPCall{{Op: "slow_lookup", Method: "GET", URL: upstream.URL + "/slow"}}
	f.saveSpec(t, spec)
	_, revokedStep, _ := f.parkedStep(t)
	revoked := f.mint(t, revokedStep)
	var sessionID string
	require.NoError(t, f.db().Model(&models.AppSession{}).Where("step_id = ?", revokedStep).Select("id").Scan(&sessionID).Error)
	require.NoError(t, f.api.P.Sessions.Revoke(context.Background(), sessionID))

	big := `{"op":"list_invoices","payload":{"pad":"` + strings.Repeat("x", 256<<10) + `"}}`
	cases := []struct {
		name    string
		verb    string
		token   string
		body    any
		status  int
		message string
	}{
		{"bad JSON", "read", f.token, `{"op": "list_invoices",`, 400, "bad request body: invalid JSON: unexpected end of input"},
		{"no op", "write", f.token, `{"payload": {}}`, 400, "op is required"},
		{"op twice", "write", f.token, `{"op": "set_status", "op": "record_decision", "payload": {}}`, 400, `bad request body: invalid JSON: duplicate key "op"`},
		{"a filter twice", "read", f.token, `{"op": "list_invoices", "payload": {"filters": {"vendor": "ACME", "vendor": "Globex"}}}`, 400,
			`bad request body: invalid JSON: duplicate key "payload.filters.vendor"`},
		{"a filter twice, tightly", "read", f.token, `{"op":"list_invoices","payload":{"filters":{"vendor":"a","vendor":"b"}}}`, 400,
			`bad request body: invalid JSON: duplicate key "payload.filters.vendor"`},
		{"a limit twice", "read", f.token, `{"op":"list_invoices","payload":{"limit":1,"limit":2}}`, 400,
			`bad request body: invalid JSON: duplicate key "payload.limit"`},
		{"malformed await_id", "action", f.token, map[string]any{"op": "approve", "await_id": "nope"}, 400, `await_id must be a UUID, got "nope"`},
		{"unknown payload field", "read", f.token, map[string]any{"op": "list_invoices", "payload": map[string]any{"colums": []string{"id"}}}, 400, `bad payload: unknown field "colums"`},
		{"forged cursor", "read", f.token, map[string]any{"op": "list_invoices", "payload": map[string]any{"cursor": "eyJvcCI6Imxpc3RfaW52b2ljZXMiLCJvZmZzZXQiOjEwMDAwMDAwMDB9"}}, 400, "cursor is not one this API issued"},
		{"wrong field type", "read", f.token, map[string]any{"op": "list_invoices", "payload": map[string]any{"columns": "id"}}, 400, "bad payload: columns must be an array, not string"},
		{"missing key column", "write", f.token, map[string]any{"op": "set_status", "payload": map[string]any{"row": map[string]any{"status": "x"}}}, 400, `key column "id" is required for op "set_status"`},
		{"value the column refuses", "write", f.token, map[string]any{"op": "set_status", "payload": map[string]any{"row": map[string]any{"id": "one", "status": "x"}}}, 400, `value for column "id" does not fit its type`},
		{"no token", "read", "", map[string]any{"op": "list_invoices"}, 401, "session token required"},
		{"garbage token", "read", "not-a-jwt", map[string]any{"op": "list_invoices"}, 401, ""},
		{"revoked token", "read", revoked, map[string]any{"op": "list_invoices"}, 401, "session token revoked"},
		{"host token is not a session", "read", f.tenant.HostToken, map[string]any{"op": "list_invoices"}, 401, ""},
		{"op not allowed", "read", f.token, map[string]any{"op": "drop_tables"}, 403, `op "drop_tables" is not allowed for /read by this binding`},
		{"column not allowed", "write", f.token, map[string]any{"op": "set_status", "payload": map[string]any{"row": map[string]any{"id": 1, "amount": 0}}}, 403, `column "amount" is not writable through op "set_status"`},
		{"filter not allowed", "read", f.token, map[string]any{"op": "list_invoices", "payload": map[string]any{"filters": map[string]any{"amount": 1}}}, 403, `column "amount" is not filterable through op "list_invoices"`},
		{"capability not granted", "capability", f.token, map[string]any{"op": "next_review_task"}, 400, "next_review_task is performed by the host over bridge messages, not by /capability"},
		{"over 256 KiB", "read", f.token, big, 413, "request body is over the 256 KiB cap"},
		{"no tool executor", "run", f.token, map[string]any{"op": "translate", "payload": map[string]any{"texts": []string{"a"}}}, 501, `this deployment has no executor for tool "translate_text"`},
		{"capability not served", "capability", f.token, map[string]any{"op": "get_translation"}, 501, `this deployment does not serve capability "get_translation"`},
	}
	for _, tc := range cases {
		for _, v2 := range []bool{false, true} {
			var headers []string
			if v2 {
				headers = []string{"X-Nanonets-App-Runtime", "v2"}
			}
			r := f.api.call(t, "POST", "/api/app-runtime/"+tc.verb, tc.token, tc.body, headers...)
			require.Equal(t, tc.status, r.Status, "%s (v2=%v): %s", tc.name, v2, r.Raw)
			msg := errorMessage(t, r, v2)
			if tc.message != "" {
				require.Equal(t, tc.message, msg, "%s (v2=%v)", tc.name, v2)
			} else {
				require.NotEmpty(t, msg, tc.name)
			}
		}
	}

	t.Run("429 with Retry-After", func(t *testing.T) {
		// A surface of its own: the rows above spent some of this one's budget.
		_, step, _ := f.parkedStep(t)
		token := f.mint(t, step)
		for _, v2 := range []bool{false, true} {
			var headers []string
			if v2 {
				headers = []string{"X-Nanonets-App-Runtime", "v2"}
			}
			// The rate is 5/s with a burst of 20: at least 20 calls pass at once,
			// and a surface that keeps calling is refused well before 100.
			var last response
			passed := 0
			for range 100 {
				last = f.api.call(t, "POST", "/api/app-runtime/action", token, map[string]any{"op": "note_only", "payload": map[string]any{"rows": map[string]any{"record_decision": map[string]any{"decision": "n"}}}}, headers...)
				if last.Status == 429 {
					break
				}
				require.Equal(t, 200, last.Status, string(last.Raw))
				passed++
			}
			require.Equal(t, 429, last.Status, "a surface calling faster than 5/s is refused")
			require.GreaterOrEqual(t, passed, limit.SurfaceBurst, "the burst is 20 per surface")
			secs, err := strconv.Atoi(last.Header.Get("Retry-After"))
			require.NoError(t, err, "Retry-After is an integer")
			require.GreaterOrEqual(t, secs, 1)
			require.NotEmpty(t, errorMessage(t, last, v2))
			// Let the bucket refill before the other envelope.
			time.Sleep(time.Duration(limit.SurfaceBurst/limit.SurfaceRatePerSecond+1) * time.Second)
		}
	})

	t.Run("501 without a gateway, 503 when the lookup bulkhead is full", func(t *testing.T) {
		gw := f.api.P.Runtime.Gateway
		f.api.P.Runtime.Gateway = nil
		r := f.verb(t, "read", map[string]any{"op": "slow_lookup"})
		require.Equal(t, 501, r.Status, string(r.Raw))
		require.Equal(t, "this deployment has no HTTP gateway; http_calls are not served", r.Body["error"])
		f.api.P.Runtime.Gateway = gw

		generousRate(f.api)
		holder := make(chan response, 1)
		go func() { holder <- f.verb(t, "read", map[string]any{"op": "slow_lookup"}) }()
		require.Eventually(t, func() bool {
			select {
			case r := <-holder:
				t.Fatalf("the held lookup returned early: %d %s", r.Status, r.Raw)
			default:
			}
			return f.api.P.Bulkhead.InUse() == 1
		}, 5*time.Second, 5*time.Millisecond)
		for _, v2 := range []bool{false, true} {
			var headers []string
			if v2 {
				headers = []string{"X-Nanonets-App-Runtime", "v2"}
			}
			r := f.verb(t, "read", map[string]any{"op": "slow_lookup"}, headers...)
			require.Equal(t, 503, r.Status, string(r.Raw))
			require.NotEmpty(t, errorMessage(t, r, v2))
		}
		blocked <- struct{}{}
		require.Equal(t, 200, (<-holder).Status)
	})
}

// errorMessage reads the message of an error reply, checking the envelope's shape.
func errorMessage(t *testing.T, r response, v2 bool) string {
	t.Helper()
	if !v2 {
		msg, ok := r.Body["error"].(string)
		require.True(t, ok, "v1 errors are {\"error\": message}: %s", r.Raw)
		return msg
	}
	require.Equal(t, false, r.Body["ok"], string(r.Raw))
	e, ok := r.Body["error"].(map[string]any)
	require.True(t, ok, "v2 errors are {ok:false, error:{status, message}}: %s", r.Raw)
	require.Equal(t, float64(r.Status), e["status"])
	return e["message"].(string)
}

func TestAChunkedBodyOverTheCapIs413(t *testing.T) {
	t.Parallel()
	f := newRuntimeFixture(t)
	body := `{"op":"list_invoices","payload":{"pad":"` + strings.Repeat("x", 300<<10) + `"}}`
	for _, v2 := range []bool{false, true} {
		// io.MultiReader hides the length, so the client sends the body chunked.
		req, err := http.NewRequest("POST", f.api.URL+"/api/app-runtime/read", io.MultiReader(strings.NewReader(body)))
		require.NoError(t, err)
		req.Header.Set("Authorization", "Bearer "+f.token)
		req.Header.Set("Content-Type", "application/json")
		if v2 {
			req.Header.Set("X-Nanonets-App-Runtime", "v2")
		}
		res, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		raw, _ := io.ReadAll(res.Body)
		res.Body.Close()
		checkOpenAPI(t, req, nil, res.StatusCode, res.Header, raw)
		require.Zero(t, req.ContentLength, "unknown length: net/http sends it chunked")
		require.Equal(t, 413, res.StatusCode, string(raw))
		msg := errorMessage(t, response{Status: res.StatusCode, Raw: raw, Body: decodeBody(t, raw)}, v2)
		require.Equal(t, "request body is over the 256 KiB cap", msg)
	}
}

func decodeBody(t *testing.T, raw []byte) map[string]any {
	t.Helper()
	var m map[string]any
	require.NoError(t, json.Unmarshal(raw, &m))
	return m
}

// TestForgedTokensOnAKeepAliveConnectionAreRefused: the server reuses a
// connection's header buffers for its next request, so a token the session
// cache kept by reference would be overwritten by the next request's token,
// and a forgery of the same length could then be served the cached claims.
func TestForgedTokensOnAKeepAliveConnectionAreRefused(t *testing.T) {
	t.Parallel()
	f := newRuntimeFixture(t)
	conn, err := net.Dial("tcp", strings.TrimPrefix(f.api.URL, "http://"))
	require.NoError(t, err)
	t.Cleanup(func() { _ = conn.Close() })
	replies := bufio.NewReader(conn)
	body := `{"op":"list_invoices"}`
	send := func(token string) int {
		_, err := fmt.Fprintf(conn, "POST /api/app-runtime/read HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer %s\r\n"+
			"Content-Type: application/json\r\nContent-Length: %d\r\n\r\n%s", token, len(body), body)
		require.NoError(t, err)
		res, err := http.ReadResponse(replies, nil)
		require.NoError(t, err)
		_, _ = io.ReadAll(res.Body)
		require.NoError(t, res.Body.Close())
		return res.StatusCode
	}
	require.Equal(t, 200, send(f.token))

	sig := strings.LastIndexByte(f.token, '.') + 1
	const alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"
	for _, at := range []int{sig + 3, sig + 11, sig + 19} {
		for _, ch := range []byte(alphabet) {
			if f.token[at] == ch {
				continue
			}
			forged := []byte(f.token)
			forged[at] = ch
			require.Equal(t, 401, send(string(forged)), "a token with a forged signature is refused")
		}
	}
	require.Equal(t, 200, send(f.token), "the genuine token still works")
}

// TestAKeyColumnFixedByTheBindingScopesAnUpdateToTheSession: a write op whose
// key includes a column the binding fixes to the session ("{{task_id}}")
// updates only the session's own rows, without the bundle having to send
// that column, and a value the bundle sends for it changes nothing.
func TestAKeyColumnFixedByTheBindingScopesAnUpdateToTheSession(t *testing.T) {
	t.Parallel()
	f := newRuntimeFixture(t)
	spec := fixtureSpec()
	spec.Writes = append(spec.Writes, bindingspec.Write{Op: "revise_decision", Table: "decisions", Mode: bindingspec.ModeUpdate,
		KeyColumns: []string{"id", "task_id"}, Columns: []string{"decision"}, FixedValues: map[string]any{"task_id": "{{task_id}}"}})
	f.saveSpec(t, spec)
	otherTask := models.NewID()
	require.NoError(t, f.source.DB.Exec(`INSERT INTO decisions (id, task_id, decision) VALUES (1, ?, 'mine'), (2, ?, 'theirs')`,
		f.taskID, otherTask).Error)

	revise := func(row map[string]any) response {
		return f.verb(t, "write", map[string]any{"op": "revise_decision", "payload": map[string]any{"row": row}})
	}
	r := revise(map[string]any{"id": 1, "decision": "revised"})
	require.Equal(t, 200, r.Status, string(r.Raw))
	require.Equal(t, map[string]any{"rows_affected": float64(1)}, r.Body)

	r = revise(map[string]any{"id": 2, "decision": "hijacked"})
	require.Equal(t, 200, r.Status, string(r.Raw))
	require.Equal(t, map[string]any{"rows_affected": float64(0)}, r.Body, "another task's row is out of reach")
	r = revise(map[string]any{"id": 2, "task_id": otherTask, "decision": "hijacked"})
	require.Equal(t, 200, r.Status, string(r.Raw))
	require.Equal(t, map[string]any{"rows_affected": float64(0)}, r.Body, "the fixed value wins over the request's")

	var decisions []string
	require.NoError(t, f.source.DB.Raw(`SELECT decision FROM decisions ORDER BY id`).Scan(&decisions).Error)
	require.Equal(t, []string{"revised", "theirs"}, decisions)
}

// TestAWriteOpSavedBeforeTheScopeRuleIsRefused: a binding saved before the
// rule that an update's fixed values must be key columns (written here
// behind validation's back, as an older release stored it) does not run the
// op that could take another task's row over: /write and /action answer 403
// and no row changes.
func TestAWriteOpSavedBeforeTheScopeRuleIsRefused(t *testing.T) {
	t.Parallel()
	f := newRuntimeFixture(t)
	spec := fixtureSpec()
	spec.Writes = append(spec.Writes, bindingspec.Write{Op: "take_over", Table: "decisions", Mode: bindingspec.ModeUpdate,
		KeyColumns: []string{"id"}, Columns: []string{"decision"}, FixedValues: map[string]any{"task_id": "{{task_id}}"}})
	spec.Actions = append(spec.Actions, bindingspec.Action{Name: "take_over_all", Writes: []string{"take_over"}})
	// No verb has loaded the binding yet, so the next call reads this row.
	require.NoError(t, f.db().Model(&models.Binding{}).Where("id = ?", f.bindingID).
		Update("allowed_operations", models.MustJSON(spec)).Error)
	otherTask := models.NewID()
	require.NoError(t, f.source.DB.Exec(`INSERT INTO decisions (id, task_id, decision) VALUES (7, ?, 'theirs')`, otherTask).Error)

	want := `write op "take_over" is disabled: its fixed value for column "task_id" is not one of its key columns; an admin must fix the binding`
	r := f.verb(t, "write", map[string]any{"op": "take_over", "payload": map[string]any{"row": map[string]any{"id": 7, "decision": "mine"}}})
	require.Equal(t, 403, r.Status, string(r.Raw))
	require.Equal(t, want, r.Body["error"])
	r = f.verb(t, "action", map[string]any{"op": "take_over_all", "payload": map[string]any{"rows": map[string]any{"take_over": map[string]any{"id": 7, "decision": "mine"}}}})
	require.Equal(t, 403, r.Status, string(r.Raw))
	require.Equal(t, want, r.Body["error"])

	var row struct{ TaskID, Decision string }
	require.NoError(t, f.source.DB.Raw(`SELECT task_id, decision FROM decisions WHERE id = 7`).Scan(&row).Error)
	require.Equal(t, otherTask, row.TaskID, "the other task's row is still its own")
	require.Equal(t, "theirs", row.Decision)
	r = f.verb(t, "read", map[string]any{"op": "list_invoices"})
	require.Equal(t, 200, r.Status, "the binding's other ops still run: %s", r.Raw)
}

// TestAnActionCutOffFromThePlatformAfterItsWritesIsRecordedOnce: the
// platform's database closes the action's connection (a restart) after the
// data source committed its writes. The action records what it did on a new
// connection and answers 200, so the caller does not retry an approval
// that already wrote: one decision row, the await released, one feed row.
func TestAnActionCutOffFromThePlatformAfterItsWritesIsRecordedOnce(t *testing.T) {
	t.Parallel()
	app := "cut-" + models.NewID()
	st, err := store.Open(context.Background(), testkit.URLOf(testkit.Schema(t))+"&application_name="+app, store.Options{})
	require.NoError(t, err)
	t.Cleanup(func() { _ = st.Close() })
	var cut atomic.Int32
	// The upstream answers the action's http_call while the platform
	// transaction holding the await is open: it ends that connection.
	upstream := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var n int32
		err := st.DB.Raw(`SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity
			WHERE application_name = ? AND state = 'idle in transaction'`, app).Scan(&n).Error
		if err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		cut.Add(n)
		_, _ = w.Write([]byte(`{"exported":true}`))
	}))
	t.Cleanup(upstream.Close)
	f := newRuntimeFixtureWith(t, st, testkit.Redis(t), func(dsn string) string { return dsn })
	spec := fixtureSpec()
	spec.HTTPCalls = []bindingspec.HTTPCall{{Op: "export", Method: "POST", URL: upstream.URL + "/ok"}}
	spec.Actions = append(spec.Actions, bindingspec.Action{Name: "export_and_approve", Writes: []string{"record_decision"},
		HTTPCalls: []string{"export"}, FeedEvent: "invoice_approved", ResolvesAwait: true})
	f.saveSpec(t, spec)

	r := f.verb(t, "action", map[string]any{"op": "export_and_approve", "payload": map[string]any{"rows": map[string]any{"record_decision": map[string]any{"decision": "once"}}}})
	require.Equal(t, 200, r.Status, string(r.Raw))
	require.EqualValues(t, 1, cut.Load(), "the action's platform transaction was cut off")
	require.Equal(t, true, r.Body["results"].(map[string]any)["await_resolved"])
	var decisions, feed int64
	require.NoError(t, f.source.DB.Raw("SELECT count(*) FROM decisions").Scan(&decisions).Error)
	require.EqualValues(t, 1, decisions)
	var aw models.TaskAwait
	require.NoError(t, f.db().Take(&aw, "id = ?", f.awaitID).Error)
	require.Equal(t, models.AwaitResolved, aw.Status)
	require.NoError(t, f.db().Model(&models.FeedEvent{}).Where("task_id = ? AND type = ? AND intent_id IS NOT NULL", f.taskID, models.FeedAgentAction).Count(&feed).Error)
	require.EqualValues(t, 1, feed)

	r = f.verb(t, "action", map[string]any{"op": "export_and_approve", "payload": map[string]any{"rows": map[string]any{"record_decision": map[string]any{"decision": "again"}}}})
	require.Equal(t, 409, r.Status, "a retry finds the review settled: %s", r.Raw)
}
