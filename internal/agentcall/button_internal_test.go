package agentcall

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"gorm.io/gorm"

	"github.com/appruntime/appruntime/internal/agenttool"
	"github.com/appruntime/appruntime/internal/apperr"
	"github.com/appruntime/appruntime/internal/logging"
	"github.com/appruntime/appruntime/internal/store"
	"github.com/appruntime/appruntime/internal/task"
	"github.com/appruntime/appruntime/internal/testkit"
	"github.com/appruntime/appruntime/models"
)

// parkedCard is a task parked on a pending-input card of one call.
func parkedCard(t *testing.T, st *store.Store) (models.ToolCall, models.Task) {
	t.Helper()
	ctx := context.Background()
	tn := testkit.NewTenant(t, st.DB)
	caller := task.Caller{WorkspaceID: tn.Workspace.ID, AgentID: tn.Agent.ID, Actor: "agent:" + tn.Agent.ID}
	view, err := task.NewService(task.Options{Store: st, Log: logging.New(io.Discard, slog.LevelError)}).Create(ctx, caller, task.TaskInput{Title: "t"})
	require.NoError(t, err)
	var tk models.Task
	require.NoError(t, st.DB.Where("id = ?", view.ID).Take(&tk).Error)
	now := time.Now().UTC()
	card := agenttool.PendingInput{Type: agenttool.PendingInputType, Title: "Question",
		Elements: []agenttool.Button{{Type: agenttool.ButtonElementType, ID: "ok", Label: "OK", Input: json.RawMessage(`{"answer":"ok"}`)}}}
	step := models.Step{ID: models.NewID(), TaskID: tk.ID, Kind: models.StepAgentTool, Status: models.StepCompleted, CreatedAt: now, UpdatedAt: now}
	call := models.ToolCall{ID: models.NewID(), TaskID: tk.ID, StepID: step.ID, AgentID: tn.Agent.ID, Name: "ask",
		Input: models.JSON(`{}`), Status: models.ToolCallPendingInput, Card: models.MustJSON(card), CreatedAt: now, UpdatedAt: now}
	require.NoError(t, st.Tx(ctx, func(tx *gorm.DB) error {
		if err := tx.Create(&step).Error; err != nil {
			return err
		}
		if err := tx.Create(&call).Error; err != nil {
			return err
		}
		return park(tx, &call, now)
	}))
	return call, tk
}

// TestAClickAppliedAgainIsRecordedOnce pins how a click's transaction,
// retried on a new connection after a restart cut it, tells its own
// earlier commit (its answer lost: the same person, the same mark) from
// another click: the first is taken as done and records nothing twice;
// the second is refused, whoever clicks, until a claim lapses.
func TestAClickAppliedAgainIsRecordedOnce(t *testing.T) {
	t.Parallel()
	ann := Clicker{UserID: models.NewID(), Actor: "user:ann"}
	bob := Clicker{UserID: models.NewID(), Actor: "user:bob"}
	reply := agenttool.Reply{Content: `{"answer":"ok"}`}
	lease := time.Minute
	type step struct {
		name   string
		tx     func(call *models.ToolCall, tk models.Task, at time.Time) func(*gorm.DB) error
		at     int // which mark: the same number is the same attempt's
		refuse string
	}
	claim := func(who Clicker, lease time.Duration) func(*models.ToolCall, models.Task, time.Time) func(*gorm.DB) error {
		return func(call *models.ToolCall, _ models.Task, at time.Time) func(*gorm.DB) error {
			return claimTx(call, who, "ok", at, lease)
		}
	}
	answerAs := func(who Clicker, fromCard bool) func(*models.ToolCall, models.Task, time.Time) func(*gorm.DB) error {
		return func(call *models.ToolCall, tk models.Task, at time.Time) func(*gorm.DB) error {
			return answerTx(context.Background(), call, tk, who, "ok", reply, fromCard, at)
		}
	}
	cases := []struct {
		name  string
		steps []step
		by    string // who answered it in the end ("" when nobody did)
	}{
		{"a card answered, applied again", []step{
			{"answer", answerAs(ann, true), 1, ""},
			{"the same answer again", answerAs(ann, true), 1, ""},
			{"her second click", answerAs(ann, true), 2, "answered already"},
			{"another person's", answerAs(bob, true), 3, "answered already"},
		}, ann.Actor},
		{"a claim applied again, then its answer", []step{
			{"claim", claim(ann, lease), 1, ""},
			{"the same claim again", claim(ann, lease), 1, ""},
			{"her second click", claim(ann, lease), 2, "another click on this card is running"},
			{"another person's", answerAs(bob, true), 3, "another click on this card is running"},
			{"the claim's answer", answerAs(ann, false), 4, ""},
			{"the same answer again", answerAs(ann, false), 4, ""},
			{"another answer of her claim", answerAs(ann, false), 5, "claim expired"},
		}, ann.Actor},
		{"a lapsed claim", []step{
			{"claim", claim(ann, -time.Second), 1, ""},
			{"another person's click takes the card", answerAs(bob, true), 2, ""},
			{"the lapsed claim's answer", answerAs(ann, false), 3, "claim expired"},
		}, bob.Actor},
		{"a claim only", []step{
			{"claim", claim(ann, lease), 1, ""},
			{"the same claim again", claim(ann, lease), 1, ""},
		}, ""},
	}
	testkit.EachDialect(t, func(t *testing.T, st *store.Store) {
		for _, c := range cases {
			t.Run(c.name, func(t *testing.T) {
				call, tk := parkedCard(t, st)
				base := stamp()
				for _, s := range c.steps {
					at := base.Add(time.Duration(s.at) * time.Millisecond)
					err := st.Tx(context.Background(), s.tx(&call, tk, at))
					if s.refuse == "" {
						require.NoError(t, err, s.name)
						continue
					}
					require.Equal(t, apperr.Conflict, apperr.CodeOf(err), "%s: %v", s.name, err)
					require.Contains(t, err.Error(), s.refuse, s.name)
				}
				var got models.ToolCall
				require.NoError(t, st.DB.Where("id = ?", call.ID).Take(&got).Error)
				var clicks int64
				require.NoError(t, st.DB.Model(&models.FeedEvent{}).Where("task_id = ? AND type = ?", tk.ID, models.FeedToolCallClick).Count(&clicks).Error)
				resumes := testkit.ResumeEvents(t, st.DB, tk.ID)
				var aw models.TaskAwait
				require.NoError(t, st.DB.Where("task_id = ?", tk.ID).Take(&aw).Error)
				if c.by == "" {
					require.Equal(t, models.ToolCallClicking, got.Status)
					require.Zero(t, clicks)
					require.Zero(t, resumes)
					require.Equal(t, models.AwaitPending, aw.Status)
					return
				}
				require.Equal(t, models.ToolCallCompleted, got.Status)
				require.Equal(t, c.by, got.ClickedBy)
				require.Nil(t, got.ClickExpiresAt)
				require.EqualValues(t, 1, clicks, "one click feed row")
				require.EqualValues(t, 1, resumes, "one resume event")
				require.Equal(t, models.AwaitResolved, aw.Status)
			})
		}
	})
}
