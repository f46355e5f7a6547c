package intent

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"time"

	"gorm.io/gorm"

	"github.com/appruntime/appruntime/internal/config"
	"github.com/appruntime/appruntime/internal/feed"
	"github.com/appruntime/appruntime/internal/store"
	"github.com/appruntime/appruntime/models"
)

// StaleAfter is how old an intent may grow before Sweep records it as
// unknown whatever its owner: far longer than a write can take (a data-source
// statement is cut off after datasource.QueryTimeout), so only an intent
// whose completion failed (the platform database was down at that moment)
// or whose owner cannot be known dead (SQLite) waits this long.
const StaleAfter = 5 * time.Minute

// Outcome reasons of the unknown feed rows.
const (
	// ReasonOwnerGone: the process writing stopped (crashed, killed)
	// between the intent and the feed row.
	ReasonOwnerGone = "the process writing stopped before it recorded the outcome"
	// ReasonStale: the intent was never completed within StaleAfter.
	ReasonStale = "the outcome was not recorded in time"
	// ReasonAnswerLost: the connection to the data source broke while the
	// write was in flight, so its answer never came.
	ReasonAnswerLost = "the data source's answer was lost"
)

// UnknownPayload is the payload of the agent_action_unknown feed row of an
// intent: what was to be written, when, and why its outcome is unknown.
func UnknownPayload(in models.WriteIntent, reason string) models.JSON {
	return models.MustJSON(map[string]any{
		"outcome":     "unknown",
		"reason":      reason,
		"intent_id":   in.ID,
		"intended":    in.Payload,
		"intended_at": in.CreatedAt,
	})
}

// Sweep records abandoned intents as agent_action_unknown feed rows and
// returns how many it recorded: on Postgres, those of owners that are gone
// (their lock is free); everywhere, those older than StaleAfter. Each intent
// is recorded once, however many sweeps run at once: it is deleted in the
// transaction that writes its feed row, and a completion racing the sweep
// finds it gone. The api runs a sweep when it starts, the worker
// periodically.
func Sweep(ctx context.Context, st *store.Store, now time.Time) (int, error) {
	total := 0
	if st.Dialect == config.Postgres {
		var owners []string
		if err := st.DB.WithContext(ctx).Model(&models.WriteIntent{}).Distinct("owner").Pluck("owner", &owners).Error; err != nil {
			return 0, fmt.Errorf("intent: list owners: %w", err)
		}
		for _, owner := range owners {
			err := st.Tx(ctx, func(tx *gorm.DB) error {
				var gone bool
				// A transaction-level lock: released at commit, and free
				// exactly when no live owner holds its session-level one.
				if err := tx.Raw("SELECT pg_try_advisory_xact_lock(?, hashtext(?))", ownerLockClass, owner).Scan(&gone).Error; err != nil {
					return fmt.Errorf("intent: test owner: %w", err)
				}
				if !gone {
					return nil
				}
				n, err := recordUnknown(ctx, tx, ReasonOwnerGone, "owner = ?", owner)
				total += n
				return err
			})
			if err != nil {
				return total, err
			}
		}
	}
	err := st.Tx(ctx, func(tx *gorm.DB) error {
		n, err := recordUnknown(ctx, tx, ReasonStale, "created_at < ?", now.Add(-StaleAfter))
		total += n
		return err
	})
	return total, err
}

// recordUnknown deletes the intents matching where and writes their
// unknown feed rows, inside tx.
func recordUnknown(ctx context.Context, tx *gorm.DB, reason, where string, args ...any) (int, error) {
	var rows []models.WriteIntent
	err := tx.WithContext(ctx).Raw("DELETE FROM write_intents WHERE "+where+
		" RETURNING id, owner, task_id, step_id, name, actor, payload, created_at", args...).Scan(&rows).Error
	if err != nil {
		return 0, fmt.Errorf("intent: take abandoned intents: %w", err)
	}
	if len(rows) == 0 {
		return 0, nil
	}
	// Intents have no foreign keys: those of a task deleted meanwhile go
	// with it, and a step deleted meanwhile is no longer named.
	tasks, steps := make([]string, len(rows)), make([]string, len(rows))
	for i, in := range rows {
		tasks[i], steps[i] = in.TaskID, in.StepID
	}
	var liveTasks, liveSteps []string
	if err := tx.Model(&models.Task{}).Where("id IN ?", tasks).Pluck("id", &liveTasks).Error; err != nil {
		return 0, fmt.Errorf("intent: find tasks: %w", err)
	}
	if err := tx.Model(&models.Step{}).Where("id IN ?", steps).Pluck("id", &liveSteps).Error; err != nil {
		return 0, fmt.Errorf("intent: find steps: %w", err)
	}
	now := time.Now().UTC()
	events := make([]models.FeedEvent, 0, len(rows))
	for _, in := range rows {
		if !slices.Contains(liveTasks, in.TaskID) {
			continue
		}
		ev := feedRow(in, models.FeedAgentActionUnknown, UnknownPayload(in, reason), now)
		if !slices.Contains(liveSteps, in.StepID) {
			ev.StepID = nil
		}
		events = append(events, ev)
	}
	if err := feed.Insert(ctx, tx, false, events...); err != nil {
		return 0, fmt.Errorf("intent: record unknown outcomes: %w", err)
	}
	return len(events), nil
}

// SweepAndLog runs Sweep and logs what it recorded (a warning: each is a
// write an admin may have to check) or why it failed.
func SweepAndLog(ctx context.Context, st *store.Store, log *slog.Logger) {
	n, err := Sweep(ctx, st, time.Now())
	if err != nil && ctx.Err() == nil {
		log.WarnContext(ctx, "write intent sweep failed", "error", err.Error())
	}
	if n > 0 {
		log.WarnContext(ctx, "writes recorded as outcome unknown", "count", n)
	}
}
