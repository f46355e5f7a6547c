package agentcall

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"gorm.io/gorm"

	"github.com/appruntime/appruntime/internal/agenttool"
	"github.com/appruntime/appruntime/internal/apperr"
	"github.com/appruntime/appruntime/internal/feed"
	"github.com/appruntime/appruntime/internal/review"
	"github.com/appruntime/appruntime/internal/store"
	"github.com/appruntime/appruntime/jobs"
	"github.com/appruntime/appruntime/models"
)

// ReasonButton is the reason recorded on an await a card's button released.
const ReasonButton = "pending_input"

// clickGrace is how long past the deadline a click's claim outlives it: a
// claim older than deadline + grace belongs to a process that stopped, and
// the card takes clicks again.
const clickGrace = 30 * time.Second

// Clicker is the person pressing a button: the host token's workspace and
// user, and the actor the feed records.
type Clicker struct {
	WorkspaceID string
	UserID      string
	Actor       string
}

// Click presses button buttonID of the card of tool call callID on task
// taskID, for a person of the task's workspace. Of concurrent clicks on a
// card exactly one runs; the others get 409, as do clicks after the card
// was answered. A button without target gives its input as the tool
// result; one with a target runs it (an app target with an identity token
// naming the person) and its result is the tool result. Then, in one
// transaction, the call completes, its step records the result, the await
// is released with its resume event written to the outbox (as a review
// action releases one), and the feed records the click. When the target
// fails, the call stays parked, its error is recorded on it and in the
// feed, the card takes clicks again, and the error is returned.
func (s *Service) Click(ctx context.Context, who Clicker, taskID, callID, buttonID string) (CallView, error) {
	db := s.st.DB.WithContext(ctx)
	call, t, err := findCall(ctx, db, who.WorkspaceID, taskID, callID)
	if err != nil {
		return CallView{}, err
	}
	if len(call.Card) == 0 {
		return CallView{}, apperr.Conflictf("tool call %s has no pending-input card", call.ID)
	}
	var card agenttool.PendingInput
	if err := json.Unmarshal(call.Card, &card); err != nil {
		return CallView{}, fmt.Errorf("agentcall: stored card of %s: %w", call.ID, err)
	}
	run, err := card.Click(buttonID)
	if err != nil {
		return CallView{}, err
	}
	if run.Result != nil {
		// Nothing runs outside the database: the card is claimed and
		// answered in one transaction, so no claim outlives a cut.
		if err := s.answer(ctx, &call, t, who, buttonID, *run.Result, true); err != nil {
			return CallView{}, err
		}
		if s.afterRelease != nil {
			s.afterRelease(ctx)
		}
		return ViewOf(call), nil
	}
	if err := s.claimClick(ctx, &call, who, buttonID); err != nil {
		return CallView{}, err
	}
	out, runErr := s.run(ctx, who.WorkspaceID, jobs.AgentToolCall{ToolCallID: call.ID, ButtonID: buttonID, UserID: who.UserID})
	ctx = context.WithoutCancel(ctx)
	if runErr != nil {
		if err := s.unclaim(ctx, &call, who, buttonID, runErr); err != nil {
			return CallView{}, err
		}
		return CallView{}, runErr
	}
	if out.Reply.Pending != nil {
		// The target asks again: its card replaces this one, and the task
		// stays parked on the same await.
		return s.replaceCard(ctx, &call, who, buttonID, *out.Reply.Pending)
	}
	if err := s.answer(ctx, &call, t, who, buttonID, out.Reply, false); err != nil {
		return CallView{}, err
	}
	if s.afterRelease != nil {
		s.afterRelease(ctx)
	}
	return ViewOf(call), nil
}

// A click's statements are retried on a new connection while the platform's
// database restarts, for up to RecordRetryFor
// (docs/architecture.md#12-postgres-records-redis-carries): a claim or an
// answer a restart cut would otherwise hold the card until its claim
// lapses, refusing the person's own click again. Each attempt writes its
// own updated_at (a microsecond, taken once per step); a retry whose
// update changes nothing looks for that mark to tell an earlier attempt
// that committed (its answer lost) from another click.

// stamp is a step's mark: the time it writes as updated_at, to the
// precision the databases keep.
func stamp() time.Time { return time.Now().UTC().Truncate(time.Microsecond) }

// mine reports whether cur is in status after an update by who marked at.
func mine(cur models.ToolCall, who Clicker, status string, at time.Time) bool {
	return cur.Status == status && cur.ClickedBy == who.Actor && cur.UpdatedAt.Equal(at)
}

// reload reads what a conditional update of call found instead.
func reload(tx *gorm.DB, id string) (models.ToolCall, error) {
	var cur models.ToolCall
	err := tx.Select("status", "clicked_by", "updated_at").Where("id = ?", id).Take(&cur).Error
	return cur, store.NotFound(err, "agentcall: reload tool call", "tool call")
}

// refused is the 409 for a click that found the card in cur's state.
func refused(cur models.ToolCall) error {
	if cur.Status == models.ToolCallClicking {
		return apperr.Conflictf("another click on this card is running")
	}
	return apperr.Conflictf("this card was answered already (the tool call is %s)", cur.Status)
}

// claimable is the condition of a card a click may take: on its card, or
// claimed by a click whose process stopped (its claim lapsed).
func claimable(tx *gorm.DB, id string, now time.Time) *gorm.DB {
	return tx.Model(&models.ToolCall{}).Where("id = ? AND (status = ? OR (status = ? AND click_expires_at < ?))",
		id, models.ToolCallPendingInput, models.ToolCallClicking, now)
}

// claimClick makes this click the one that runs its button's target: a
// conditional update from pending_input (or from a claim whose holder
// stopped), so of racing clicks one wins.
func (s *Service) claimClick(ctx context.Context, call *models.ToolCall, who Clicker, buttonID string) error {
	return s.st.TxRetrying(ctx, RecordRetryFor, claimTx(call, who, buttonID, stamp(), s.deadline+clickGrace))
}

// claimTx is claimClick's transaction, marked now, for a claim of lease.
func claimTx(call *models.ToolCall, who Clicker, buttonID string, now time.Time, lease time.Duration) func(*gorm.DB) error {
	expires := now.Add(lease)
	return func(tx *gorm.DB) error {
		res := claimable(tx, call.ID, now).
			Updates(map[string]any{"status": models.ToolCallClicking, "clicked_button": buttonID, "clicked_by": who.Actor,
				"click_expires_at": expires, "updated_at": now})
		if res.Error != nil {
			return fmt.Errorf("agentcall: claim click: %w", res.Error)
		}
		if res.RowsAffected == 0 {
			cur, err := reload(tx, call.ID)
			if err != nil {
				return err
			}
			if !mine(cur, who, models.ToolCallClicking, now) {
				return refused(cur)
			}
		}
		call.Status, call.ClickedButton, call.ClickedBy, call.ClickExpiresAt = models.ToolCallClicking, buttonID, who.Actor, &expires
		return nil
	}
}

// unclaim puts a call whose button's target failed back on its card, with
// the error, and records the failure in the feed.
func (s *Service) unclaim(ctx context.Context, call *models.ToolCall, who Clicker, buttonID string, runErr error) error {
	_, _, msg := apperr.Public(runErr)
	now := stamp()
	return s.st.TxRetrying(ctx, RecordRetryFor, func(tx *gorm.DB) error {
		res := tx.Model(&models.ToolCall{}).Where("id = ? AND status = ? AND clicked_by = ?", call.ID, models.ToolCallClicking, who.Actor).
			Updates(map[string]any{"status": models.ToolCallPendingInput, "error": msg, "click_expires_at": nil, "updated_at": now})
		if res.Error != nil {
			return fmt.Errorf("agentcall: release click: %w", res.Error)
		}
		if res.RowsAffected == 0 {
			// Released already (an earlier attempt committed), or the
			// claim lapsed and another click took the card: either way
			// this click has nothing more to record.
			return nil
		}
		return feed.Insert(ctx, tx, false, clickEvent(call, who, buttonID, now, map[string]any{"status": "failed", "error": msg}))
	})
}

// replaceCard parks the call again on the card its button's target returned.
func (s *Service) replaceCard(ctx context.Context, call *models.ToolCall, who Clicker, buttonID string, card agenttool.PendingInput) (CallView, error) {
	now := stamp()
	err := s.st.TxRetrying(ctx, RecordRetryFor, func(tx *gorm.DB) error {
		res := tx.Model(&models.ToolCall{}).Where("id = ? AND status = ? AND clicked_by = ?", call.ID, models.ToolCallClicking, who.Actor).
			Updates(map[string]any{"status": models.ToolCallPendingInput, "card": models.MustJSON(card), "error": "",
				"click_expires_at": nil, "updated_at": now})
		if res.Error != nil {
			return fmt.Errorf("agentcall: replace card: %w", res.Error)
		}
		if res.RowsAffected == 0 {
			cur, err := reload(tx, call.ID)
			if err != nil || mine(cur, who, models.ToolCallPendingInput, now) {
				return err
			}
			return apperr.Conflictf("this click's claim expired before its target answered; press the button again")
		}
		return feed.Insert(ctx, tx, false, clickEvent(call, who, buttonID, now, map[string]any{"status": models.ToolCallPendingInput, "pending_input": card}))
	})
	if err != nil {
		return CallView{}, err
	}
	call.Status, call.Card, call.Error = models.ToolCallPendingInput, models.MustJSON(card), ""
	return ViewOf(*call), nil
}

// answer completes a call with a button's result and releases its await.
// fromCard answers a button without target straight from its card (the
// click's one transaction); otherwise the call is this click's claim.
func (s *Service) answer(ctx context.Context, call *models.ToolCall, t models.Task, who Clicker, buttonID string, reply agenttool.Reply, fromCard bool) error {
	return s.st.TxRetrying(ctx, RecordRetryFor, answerTx(ctx, call, t, who, buttonID, reply.Storable(), fromCard, stamp()))
}

// answerTx is answer's transaction, marked now.
func answerTx(ctx context.Context, call *models.ToolCall, t models.Task, who Clicker, buttonID string, reply agenttool.Reply, fromCard bool, now time.Time) func(*gorm.DB) error {
	return func(tx *gorm.DB) error {
		q := tx.Model(&models.ToolCall{}).Where("id = ? AND status = ? AND clicked_by = ?", call.ID, models.ToolCallClicking, who.Actor)
		if fromCard {
			q = claimable(tx, call.ID, now)
		}
		res := q.Updates(map[string]any{"status": models.ToolCallCompleted, "result": models.MustJSON(reply), "error": "",
			"clicked_button": buttonID, "clicked_by": who.Actor, "click_expires_at": nil, "updated_at": now})
		if res.Error != nil {
			return fmt.Errorf("agentcall: complete tool call: %w", res.Error)
		}
		if res.RowsAffected == 0 {
			cur, err := reload(tx, call.ID)
			switch {
			case err != nil:
				return err
			case mine(cur, who, models.ToolCallCompleted, now):
				// An earlier attempt committed; its answer was lost.
				call.Status, call.Result, call.Error = models.ToolCallCompleted, models.MustJSON(reply), ""
				return nil
			case fromCard:
				return refused(cur)
			}
			return apperr.Conflictf("this click's claim expired before its target answered; press the button again")
		}
		out := models.MustJSON(map[string]any{"tool_call_id": call.ID, "button": buttonID, "result": reply})
		if err := tx.Model(&models.Step{}).Where("id = ?", call.StepID).Updates(map[string]any{"output": out, "updated_at": now}).Error; err != nil {
			return fmt.Errorf("agentcall: record step: %w", err)
		}
		var aw models.TaskAwait
		err := tx.Where("task_id = ? AND source_type = ? AND correlation_key = ?", t.ID, models.AwaitSourceToolCall, call.StepID).Take(&aw).Error
		if err := store.NotFound(err, "agentcall: find await", "await of the tool call"); err != nil {
			return err
		}
		if _, _, released, err := review.ReleaseAwait(ctx, tx, t.WorkspaceID, aw.ID, who.Actor, ReasonButton); err != nil {
			return err
		} else if !released {
			return apperr.Conflictf("the task's wait on this card is settled already")
		}
		call.Status, call.Result, call.Error = models.ToolCallCompleted, models.MustJSON(reply), ""
		return feed.Insert(ctx, tx, false, clickEvent(call, who, buttonID, now, map[string]any{"status": models.ToolCallCompleted, "result": resultView(reply)}))
	}
}

func clickEvent(call *models.ToolCall, who Clicker, buttonID string, now time.Time, extra map[string]any) models.FeedEvent {
	payload := map[string]any{"tool_call_id": call.ID, "button": buttonID}
	for k, v := range extra {
		payload[k] = v
	}
	return models.FeedEvent{TaskID: call.TaskID, StepID: &call.StepID, Type: models.FeedToolCallClick, Name: call.Name,
		Payload: models.MustJSON(payload), Actor: who.Actor, CreatedAt: now}
}

// findCall loads a tool call of a task of workspaceID (one 404 for
// anything else, so other workspaces' calls cannot be probed).
func findCall(ctx context.Context, db *gorm.DB, workspaceID, taskID, callID string) (models.ToolCall, models.Task, error) {
	var call models.ToolCall
	var t models.Task
	notFound := apperr.NotFoundf("tool call not found")
	if !models.IsID(taskID) || !models.IsID(callID) {
		return call, t, notFound
	}
	err := db.WithContext(ctx).Where("id = ? AND workspace_id = ?", taskID, workspaceID).Take(&t).Error
	if errors.Is(err, gorm.ErrRecordNotFound) {
		return call, t, notFound
	}
	if err != nil {
		return call, t, fmt.Errorf("agentcall: find task: %w", err)
	}
	err = db.WithContext(ctx).Where("id = ? AND task_id = ?", callID, taskID).Take(&call).Error
	if errors.Is(err, gorm.ErrRecordNotFound) {
		return call, t, notFound
	}
	if err != nil {
		return call, t, fmt.Errorf("agentcall: find tool call: %w", err)
	}
	return call, t, nil
}
