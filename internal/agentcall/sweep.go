package agentcall

import (
	"context"
	"fmt"
	"time"

	"github.com/appruntime/appruntime/internal/agenttool"
	"github.com/appruntime/appruntime/internal/apperr"
	"github.com/appruntime/appruntime/internal/task"
	"github.com/appruntime/appruntime/models"
)

const (
	// RecordRetryFor bounds how long a call's outcome is retried while the
	// platform's database cannot be reached (a restart).
	RecordRetryFor = 30 * time.Second
	// CutCallGrace is how long past its deadline a call may stay running
	// before FailCutCalls fails it: longer than RecordRetryFor, so a live
	// process still recording its outcome is never overtaken.
	CutCallGrace = RecordRetryFor + 15*time.Second
	// cutCallsPerPass bounds the calls one FailCutCalls pass fails; the
	// next pass takes the rest.
	cutCallsPerPass = 100
)

// cutCallMessage is a cut-off call's error, as the agent and the feed see it.
const cutCallMessage = "the call was cut off: the process running it stopped before recording its outcome"

// FailCutCalls fails the agent tool calls still running past their
// deadline and CutCallGrace, oldest first, and returns how many: the api
// process that ran each stopped (a kill, a crash) before recording an
// outcome, so nothing else will. Each is recorded as a failed call is (the
// call, its step, one tool_call feed row and its tool_call.failed event),
// by the system, and only while it is still running, so passes in several
// workers at once fail each call once
// (docs/architecture.md#12-postgres-records-redis-carries).
func (s *Service) FailCutCalls(ctx context.Context, now time.Time) (int, error) {
	db := s.st.DB.WithContext(ctx)
	var calls []models.ToolCall
	err := db.Where("status = ? AND created_at < ?", models.ToolCallRunning, now.UTC().Add(-(s.deadline + CutCallGrace))).
		Order("created_at").Limit(cutCallsPerPass).Find(&calls).Error
	if err != nil {
		return 0, fmt.Errorf("agentcall: find cut calls: %w", err)
	}
	failed := 0
	for i := range calls {
		call := &calls[i]
		var step models.Step
		if err := db.Where("id = ?", call.StepID).Take(&step).Error; err != nil {
			return failed, fmt.Errorf("agentcall: step of cut call %s: %w", call.ID, err)
		}
		decl := agenttool.Declaration{Name: call.Name, DisplayName: call.Name}
		if call.DeclarationID != nil {
			var row models.AgentToolDeclaration
			if db.Where("id = ?", *call.DeclarationID).Take(&row).Error == nil {
				if d, err := decode(row); err == nil {
					decl = d
				}
			}
		}
		err := s.finishCall(ctx, task.Caller{Actor: "system"}, call, &step, decl, agenttool.Reply{}, "",
			apperr.New(apperr.Timeout, "%s", cutCallMessage))
		if err != nil {
			return failed, err
		}
		failed++
	}
	return failed, nil
}
