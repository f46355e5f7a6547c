package api_test

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/appruntime/appruntime/internal/bindingspec"
	"github.com/appruntime/appruntime/internal/outbox"
	"github.com/appruntime/appruntime/internal/review"
	"github.com/appruntime/appruntime/internal/webhook"
	"github.com/appruntime/appruntime/models"
)

// TestAnActionsDecisionReachesTheResumeEvent checks issue 29 §3: an action
// that declares reason_required is refused without a reason (400 naming
// reason, nothing written, the await still pending) or with one over 2000
// characters; with one, its task.resumed event carries the decision: the
// declared outcome, the reason, who decided and when, and the rows written
// with their ops (docs/agent-platforms.md#webhook-event-catalogue).
func TestAnActionsDecisionReachesTheResumeEvent(t *testing.T) {
	t.Parallel()
	f := newRuntimeFixture(t)
	spec := fixtureSpec()
	spec.Actions = append(spec.Actions, bindingspec.Action{Name: "reject", Writes: []string{"record_decision"},
		ResolvesAwait: true, Outcome: bindingspec.OutcomeReject, ReasonRequired: true})
	f.saveSpec(t, spec)
	body := func(reason any) map[string]any {
		p := map[string]any{"rows": map[string]any{"record_decision": map[string]any{"decision": "rejected"}}}
		if reason != nil {
			p["reason"] = reason
		}
		return map[string]any{"op": "reject", "payload": p}
	}
	decisions := func() (n int64) {
		require.NoError(t, f.source.DB.Raw("SELECT count(*) FROM decisions").Scan(&n).Error)
		return n
	}

	for _, reason := range []any{nil, "   ", strings.Repeat("é", bindingspec.MaxReasonLength+1)} {
		r := f.verb(t, "action", body(reason))
		require.Equal(t, 400, r.Status, string(r.Raw))
		require.Contains(t, r.Body["error"], "reason")
	}
	require.Zero(t, decisions(), "a refused action writes nothing")
	var aw models.TaskAwait
	require.NoError(t, f.db().Take(&aw, "id = ?", f.awaitID).Error)
	require.Equal(t, models.AwaitPending, aw.Status)

	r := f.verb(t, "action", body(strings.Repeat("é", bindingspec.MaxReasonLength-10)+" duplicate"))
	require.Equal(t, 200, r.Status, string(r.Raw))
	require.EqualValues(t, 1, decisions())

	var row models.Outbox
	require.NoError(t, f.db().Where("kind = ? AND payload ->> 'await_id' = ?", outbox.KindResumeEvent, f.awaitID).Take(&row).Error)
	var ev review.ResumePayload
	require.NoError(t, row.Payload.Decode(&ev))
	require.Equal(t, webhook.TaskResumed, ev.Type)
	require.Equal(t, "reject", ev.Action)
	require.NotNil(t, ev.Decision)
	d := *ev.Decision
	require.Equal(t, bindingspec.OutcomeReject, d.Outcome)
	require.True(t, strings.HasSuffix(d.Reason, " duplicate"))
	require.Equal(t, ev.ResolvedBy, d.DecidedBy)
	require.True(t, d.DecidedAt.Equal(ev.ResolvedAt))
	require.Len(t, d.Writes, 1)
	require.Equal(t, "record_decision", d.Writes[0].Name)
	require.Equal(t, bindingspec.ModeInsert, d.Writes[0].Op)
	require.Equal(t, "decisions", d.Writes[0].Table)
	require.EqualValues(t, 1, d.Writes[0].RowsAffected)
	require.JSONEq(t, `{"decision":"rejected","task_id":"`+f.taskID+`"}`, string(d.Writes[0].Row), "the row as written, fixed values included")

	// An action without outcome or reason_required still carries a
	// decision: no outcome, no reason, its writes.
	f2 := newRuntimeFixture(t)
	r = f2.verb(t, "action", approveBody("ok"))
	require.Equal(t, 200, r.Status, string(r.Raw))
	var row2 models.Outbox
	require.NoError(t, f2.db().Where("kind = ? AND payload ->> 'await_id' = ?", outbox.KindResumeEvent, f2.awaitID).Take(&row2).Error)
	ev = review.ResumePayload{}
	require.NoError(t, row2.Payload.Decode(&ev))
	require.NotNil(t, ev.Decision)
	require.Equal(t, "", ev.Decision.Outcome)
	require.Len(t, ev.Decision.Writes, 1)
}
