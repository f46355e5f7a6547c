package runtime

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"gorm.io/gorm"

	"github.com/appruntime/appruntime/internal/apperr"
	"github.com/appruntime/appruntime/internal/binding"
	"github.com/appruntime/appruntime/internal/bindingspec"
	"github.com/appruntime/appruntime/internal/claim"
	"github.com/appruntime/appruntime/internal/datasource"
	"github.com/appruntime/appruntime/internal/feed"
	"github.com/appruntime/appruntime/internal/review"
	"github.com/appruntime/appruntime/internal/session"
	"github.com/appruntime/appruntime/internal/webhook"
	"github.com/appruntime/appruntime/models"
)

// actionPayload is what an action takes: a row per write (by write op name),
// the placeholder values of its http_calls and the reviewer's reason
// (required by an action with reason_required; the task.resumed event
// carries it, docs/agent-platforms.md#webhook-event-catalogue).
type actionPayload struct {
	Rows   map[string]map[string]any `json:"rows,omitempty"`
	Values map[string]any            `json:"values,omitempty"`
	Reason string                    `json:"reason,omitempty"`
}

// checkReason refuses an action without the reason it requires, or with
// one longer than bindingspec.MaxReasonLength characters.
func checkReason(act *bindingspec.Action, reason string) error {
	if act.ReasonRequired && strings.TrimSpace(reason) == "" {
		return apperr.Invalidf("reason is required: action %q asks the reviewer why (reason_required)", act.Name)
	}
	if n := utf8.RuneCountInString(reason); n > bindingspec.MaxReasonLength {
		return apperr.Invalidf("reason is %d characters long, more than the %d allowed", n, bindingspec.MaxReasonLength)
	}
	return nil
}

// decisionOf is the decision the task.resumed event of an action that
// resolved its await carries: the action's outcome, the reviewer's reason
// and the rows written, with their ops (who and when are the await's).
func decisionOf(act *bindingspec.Action, reason string, stmts []datasource.WriteStmt, results map[string]any) *webhook.Decision {
	d := &webhook.Decision{Outcome: act.Outcome, Reason: strings.TrimSpace(reason), Writes: make([]webhook.Write, len(stmts))}
	for i, st := range stmts {
		n, _ := results[act.Writes[i]].(int64)
		d.Writes[i] = webhook.Write{Name: act.Writes[i], Op: st.Mode, Table: st.Table, Row: json.RawMessage(models.MustJSON(st.Values)), RowsAffected: n}
	}
	return d
}

// Action runs an action (docs/architecture.md#2-action-atomicity, #7-one-approval, #8-a-write-and-its-feed-row). Its
// write intent is committed first (409 when the step's await is settled).
// Then, in one platform transaction: the step's await is locked (409 when it
// is no longer pending), the task's review claim checked (409 when someone
// else holds it, claim.Check), the writes run in one data-source transaction, the
// http_calls next; only when every upstream answered 2xx are the writes
// committed, and then the await release, the resume event and the feed row
// (the intent's completion) are committed together. A non-2xx upstream
// rolls both back and records nothing.
func (s *Service) Action(ctx context.Context, c session.Claims, body []byte) (Result, error) {
	v, err := begin[actionPayload](ctx, s, c, body)
	if err != nil {
		return Result{}, err
	}
	b, r := v.b, v.Request
	act, ok := b.Action(r.Op)
	if !ok {
		return Result{}, opNotAllowed("action", r.Op)
	}
	if len(act.HTTPCalls) > 0 && s.Gateway == nil {
		return Result{}, apperr.NotImplementedf("this deployment has no HTTP gateway; action %q makes http_calls", act.Name)
	}
	p, err := v.payload()
	if err != nil {
		return Result{}, err
	}
	if err := checkReason(act, p.Reason); err != nil {
		return Result{}, err
	}
	for name := range p.Rows {
		if !contains(act.Writes, name) {
			return Result{}, apperr.Forbiddenf("write %q is not part of action %q", name, act.Name)
		}
	}
	stmts := make([]datasource.WriteStmt, len(act.Writes))
	for i, name := range act.Writes {
		op, _ := b.Write(name)
		row := p.Rows[name]
		if row == nil {
			row = map[string]any{}
		}
		if stmts[i], err = writeStmt(op, row, c); err != nil {
			return Result{}, err
		}
	}
	if err := s.Limiter.Allow(ctx, c.Surface()); err != nil {
		return Result{}, err
	}
	if r.AwaitID != "" {
		if err := s.checkAwaitOwner(ctx, c, r.AwaitID); err != nil {
			return Result{}, err
		}
	}
	feedName := act.FeedEvent
	if feedName == "" {
		feedName = act.Name
	}
	var src datasource.Source
	var in *models.WriteIntent
	if len(stmts) > 0 {
		if src, err = s.source(ctx, b); err != nil {
			return Result{}, err
		}
		opened, err := s.openIntent(ctx, c, feedName, intentRecord("action", "action", act.Name, "rows", v.body, p.Rows))
		if err != nil {
			return Result{}, err
		}
		in = &opened
	}

	// From here the action commits or rolls back as a whole, even when the
	// caller hangs up or the process begins to stop: a cancel between the
	// data source's commit and the platform's would leave the action to the
	// sweep as outcome unknown (and the await unreleased).
	ctx = context.WithoutCancel(ctx)
	// This process's earlier writes come before the action in the feed.
	if err := s.Journal.Flush(ctx); err != nil {
		return Result{}, err
	}
	results := map[string]any{}
	responses := map[string]any{}
	resolved, committed, lost := false, false, false
	var decision *webhook.Decision
	err = s.Store.Tx(ctx, func(db *gorm.DB) error {
		if err := review.LockSessionAwait(ctx, db, c); err != nil {
			return err
		}
		// A session minted before someone else claimed the task acts on it
		// no more: the claim holder alone, until the claim ends.
		if err := claim.Check(ctx, db, c.TaskID, c.UserID); err != nil {
			return err
		}
		var err error
		if lost, err = s.runWrites(ctx, c, b, act, src, stmts, p.Values, results, responses); err != nil {
			return err
		}
		committed = true
		if act.ResolvesAwait {
			decision = decisionOf(act, p.Reason, stmts, results)
		}
		resolved, err = recordAction(ctx, db, c, act, feedName, in, decision, results)
		return err
	})
	if err != nil && committed && apperr.Disconnected(err) {
		// The data source committed and the platform's database went away
		// under the release (a restart): what was done is recorded on a
		// new connection, so that the caller's retry does not do it twice
		// (docs/architecture.md#the-write-guarantee).
		err = s.Store.TxRetrying(ctx, recordRetryFor, func(db *gorm.DB) error {
			earlier, done, ferr := recordedAction(db, c, in)
			if ferr != nil || done {
				resolved = earlier
				return ferr
			}
			var rerr error
			resolved, rerr = recordAction(ctx, db, c, act, feedName, in, decision, results)
			return rerr
		})
		if err != nil {
			err = apperr.Wrap(err, apperr.Internal, "action %q: the writes were committed, but the platform could not record them; "+
				"they will be recorded as outcome unknown: do not retry", act.Name)
		}
	}
	if err != nil {
		// Once the data source committed, the intent stays: the sweep
		// records the action as outcome unknown, since its release and
		// feed row could not be.
		if in != nil && !committed {
			err = s.settleFailed(ctx, *in, err, lost)
		}
		return Result{}, err
	}
	if in != nil {
		s.Journal.Recorded(ctx, *in)
	}
	if resolved && s.AfterRelease != nil {
		s.AfterRelease(ctx)
	}
	out := ActionResults{Results: results, Responses: responses}
	return Result{Kind: "action", Body: &ActionReply{OK: true, ActionResults: out}, Result: &out}, nil
}

// recordRetryFor bounds how long an action whose writes the data source
// committed retries its recording while the platform's database cannot be
// reached, as the journal's settle writer does.
const recordRetryFor = 30 * time.Second

// recordAction records a committed action in db: the release of the
// step's await when the action resolves it (with decision; resolved
// reports whether this release did it) and its agent_action feed row,
// naming in.
func recordAction(ctx context.Context, db *gorm.DB, c session.Claims, act *bindingspec.Action, feedName string,
	in *models.WriteIntent, decision *webhook.Decision, results map[string]any) (resolved bool, err error) {
	if act.ResolvesAwait {
		if _, resolved, err = review.ResolveSessionAwaitDecided(ctx, db, c, actor(c), act.Name, decision); err != nil {
			return false, err
		}
	}
	results["await_resolved"] = resolved
	row := feedRow(c, models.FeedAgentAction, feedName, map[string]any{"verb": "action", "action": act.Name, "results": results})
	if in != nil {
		row.IntentID = &in.ID // the row records the intent: a sweep leaves it be
	}
	if err := feed.Insert(ctx, db, false, row); err != nil {
		return false, fmt.Errorf("runtime: record feed: %w", err)
	}
	return resolved, nil
}

// recordedAction reports whether an earlier try recorded the action of
// intent in (its commit went through, its answer was lost): done, and
// whether it released the await. Without an intent (an action of
// http_calls only) nothing tells, and it reports not done.
func recordedAction(db *gorm.DB, c session.Claims, in *models.WriteIntent) (resolved, done bool, err error) {
	if in == nil {
		return false, false, nil
	}
	var rows []models.FeedEvent
	if err := db.Select("payload").Where("task_id = ? AND intent_id = ?", c.TaskID, in.ID).Limit(1).Find(&rows).Error; err != nil {
		return false, false, fmt.Errorf("runtime: find the action's feed row: %w", err)
	}
	if len(rows) == 0 {
		return false, false, nil
	}
	var p struct {
		Results struct {
			AwaitResolved bool `json:"await_resolved"`
		} `json:"results"`
	}
	_ = json.Unmarshal(rows[0].Payload, &p)
	return p.Results.AwaitResolved, true, nil
}

// runWrites runs the action's writes in one data-source transaction, then
// its http_calls, and commits the writes only when every upstream answered
// 2xx. Its error is the data source's, the gateway's or the 502 of a
// refusing upstream; lost reports a commit whose answer was lost in flight
// (datasource.AnswerLost), the one failure after which the writes may
// nevertheless have committed.
func (s *Service) runWrites(ctx context.Context, c session.Claims, b *binding.Loaded, act *bindingspec.Action,
	src datasource.Source, stmts []datasource.WriteStmt, values map[string]any, results, responses map[string]any) (lost bool, err error) {
	var tx datasource.Tx
	if src != nil {
		if tx, err = src.Begin(ctx); err != nil {
			return false, err
		}
		defer func() { _ = tx.Rollback(context.WithoutCancel(ctx)) }()
		for i, st := range stmts {
			n, err := tx.Write(ctx, st)
			if err != nil {
				return false, fmt.Errorf("write %q: %w", act.Writes[i], err)
			}
			results[act.Writes[i]] = n
		}
	}
	if err := s.callAll(ctx, c, b, act, values, results, responses); err != nil {
		return false, err
	}
	if tx != nil {
		if err := tx.Commit(ctx); err != nil {
			return datasource.AnswerLost(err), err
		}
	}
	return false, nil
}

// callAll runs the action's http_calls in order. A non-2xx upstream fails the
// action with 502, carrying what was answered so far.
func (s *Service) callAll(ctx context.Context, c session.Claims, b *binding.Loaded, act *bindingspec.Action,
	values map[string]any, results, responses map[string]any) error {
	if len(act.HTTPCalls) == 0 {
		return nil
	}
	in := CallInput{WorkspaceID: c.WorkspaceID, Session: c.Values(), Values: values}
	for _, name := range act.HTTPCalls {
		call, _ := b.HTTPCall(name)
		resp, err := s.Gateway.Call(ctx, call, in)
		if err != nil {
			return err
		}
		results[name] = resp.Status
		responses[name] = resp
		if !resp.OK() {
			e := apperr.New(apperr.BadGateway, "action %q failed: http_call %q answered %d; nothing was recorded", act.Name, name, resp.Status)
			e.Detail = map[string]any{"ok": false, "results": results, "responses": responses}
			return e
		}
	}
	return nil
}

// checkAwaitOwner refuses an await id that is not the one of the session's
// own step: a session can never act on another task's (or step's) await.
func (s *Service) checkAwaitOwner(ctx context.Context, c session.Claims, awaitID string) error {
	var n int64
	err := s.Store.DB.WithContext(ctx).Model(&models.TaskAwait{}).
		Where("id = ? AND task_id = ? AND source_type = ? AND correlation_key = ?",
			awaitID, c.TaskID, models.AwaitSourceAppTool, c.StepID).
		Count(&n).Error
	if err != nil {
		return fmt.Errorf("runtime: check await: %w", err)
	}
	if n == 0 {
		return apperr.Unauthenticatedf("this session does not hold await %s", awaitID)
	}
	return nil
}
