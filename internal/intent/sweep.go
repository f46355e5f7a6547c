package intent

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"slices"
	"time"

	"gorm.io/gorm"
	"gorm.io/gorm/clause"

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
// (their lock is free); everywhere, those older than StaleAfter. An intent
// of an abandoned batch is recorded as unknown unless a feed row names it
// already (its write's, recorded before the owner stopped), and the batch
// row is deleted in the same transaction. Each intent is recorded once,
// however many sweeps run at once (a batch being swept is locked, and skipped
// by the others), and a completion racing the sweep finds its batch gone
// and writes nothing. The api runs a sweep when it starts, the worker
// periodically. Intents of processes from before intent batches (a row of
// write_intents each) are swept the same way.
func Sweep(ctx context.Context, st *store.Store, now time.Time) (int, error) {
	total := 0
	if st.Dialect == config.Postgres {
		owners, err := abandonedOwners(ctx, st)
		if err != nil {
			return 0, err
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
				n, err := recordAbandoned(ctx, tx, ReasonOwnerGone, "owner = ? AND "+notCutByARestart,
					owner, relockWindow.Seconds(), restartGrace.Seconds())
				total += n
				return err
			})
			if err != nil {
				return total, err
			}
		}
	}
	err := st.Tx(ctx, func(tx *gorm.DB) error {
		n, err := recordAbandoned(ctx, tx, ReasonStale, "created_at < ?", now.Add(-StaleAfter))
		total += n
		return err
	})
	return total, err
}

// A restart of the platform database ends every session, and with them the
// lock of every owner, live ones too: an owner free for a sweep to take may
// be a process whose lock connection has not noticed yet (ownerCheckInterval)
// and whose journal still retries the completions the restart cut
// (settleReconnectFor). So the batches a restart may have cut from their
// owner's lock, those opened before the server started or within
// relockWindow after, are not taken as their owner's gone until the server
// has been up restartGrace: by then a live owner holds its lock again, on
// the same id (Owner), and a dead one is recorded as before. Batches opened
// later are judged by the lock alone. The times are the platform
// database's (pg_postmaster_start_time) against the batches' created_at,
// the api's clock: clocks further apart than relockWindow shift the window.
const (
	relockWindow = 5 * time.Second
	restartGrace = 30 * time.Second
)

// notCutByARestart is the condition (on created_at; its parameters
// relockWindow and restartGrace in seconds) on the batches Sweep may take
// as their owner's gone.
const notCutByARestart = "(created_at >= pg_postmaster_start_time() + make_interval(secs => ?) OR " +
	"now() >= pg_postmaster_start_time() + make_interval(secs => ?))"

// abandonedOwners lists the owners of every batch and legacy intent.
func abandonedOwners(ctx context.Context, st *store.Store) ([]string, error) {
	var batchOwners, intentOwners []string
	if err := st.DB.WithContext(ctx).Model(&models.WriteIntentBatch{}).Distinct("owner").Pluck("owner", &batchOwners).Error; err != nil {
		return nil, fmt.Errorf("intent: list owners: %w", err)
	}
	if err := st.DB.WithContext(ctx).Model(&models.WriteIntent{}).Distinct("owner").Pluck("owner", &intentOwners).Error; err != nil {
		return nil, fmt.Errorf("intent: list owners: %w", err)
	}
	slices.Sort(batchOwners)
	for _, o := range intentOwners {
		if _, found := slices.BinarySearch(batchOwners, o); !found {
			batchOwners = append(batchOwners, o)
		}
	}
	return batchOwners, nil
}

// recordAbandoned records, inside tx, the intents of the batches and of the
// legacy intents matching where (on owner and created_at).
func recordAbandoned(ctx context.Context, tx *gorm.DB, reason, where string, args ...any) (int, error) {
	n, err := recordBatches(ctx, tx, reason, where, args...)
	if err != nil {
		return n, err
	}
	m, err := recordUnknown(ctx, tx, reason, where, args...)
	return n + m, err
}

// recordBatches takes the batches matching where (locking them, skipping
// those another sweep or a completion holds), writes the unknown feed rows
// of their intents that no feed row names, and deletes them.
func recordBatches(ctx context.Context, tx *gorm.DB, reason, where string, args ...any) (int, error) {
	tx = tx.WithContext(ctx)
	q := tx.Where(where, args...)
	if tx.Dialector.Name() == "postgres" {
		q = q.Clauses(clause.Locking{Strength: "UPDATE", Options: "SKIP LOCKED"})
	}
	var batches []models.WriteIntentBatch
	if err := q.Find(&batches).Error; err != nil {
		return 0, fmt.Errorf("intent: take abandoned batches: %w", err)
	}
	total := 0
	for _, b := range batches {
		intents, err := readRecords(b)
		if err != nil {
			return total, err
		}
		open := make([]models.WriteIntent, 0, len(intents))
		ids, tasks := make([]string, len(intents)), make([]string, len(intents))
		for i, in := range intents {
			ids[i], tasks[i] = in.ID, in.TaskID
		}
		var recorded []string
		if err := tx.Model(&models.FeedEvent{}).Where("task_id IN ? AND id > ? AND intent_id IN ?", feed.LockOrder(tasks), b.FeedAfter, ids).
			Pluck("intent_id", &recorded).Error; err != nil {
			return total, fmt.Errorf("intent: find recorded intents: %w", err)
		}
		for _, in := range intents {
			if !slices.Contains(recorded, in.ID) {
				open = append(open, in)
			}
		}
		n, err := recordUnknownOf(ctx, tx, open, reason)
		total += n
		if err != nil {
			return total, err
		}
		if err := tx.Delete(&models.WriteIntentBatch{}, "id = ?", b.ID).Error; err != nil {
			return total, fmt.Errorf("intent: delete batch: %w", err)
		}
	}
	return total, nil
}

// record is one intent of a batch's records (openRecords).
type record struct {
	ID      string      `json:"id"`
	TaskID  string      `json:"task_id"`
	StepID  string      `json:"step_id"`
	Name    string      `json:"name"`
	Actor   string      `json:"actor"`
	Payload models.JSON `json:"payload"`
}

// readRecords returns the intents of batch b.
func readRecords(b models.WriteIntentBatch) ([]models.WriteIntent, error) {
	var recs []record
	if err := json.Unmarshal([]byte(b.Intents), &recs); err != nil {
		return nil, fmt.Errorf("intent: read batch %s: %w", b.ID, err)
	}
	out := make([]models.WriteIntent, len(recs))
	for i, r := range recs {
		out[i] = models.WriteIntent{ID: r.ID, Owner: b.Owner, TaskID: r.TaskID, StepID: r.StepID, Name: r.Name,
			Actor: r.Actor, Payload: r.Payload, CreatedAt: b.CreatedAt, BatchID: b.ID}
	}
	return out, nil
}

// recordUnknown deletes the legacy intents matching where and writes their
// unknown feed rows, inside tx.
func recordUnknown(ctx context.Context, tx *gorm.DB, reason, where string, args ...any) (int, error) {
	var rows []models.WriteIntent
	err := tx.WithContext(ctx).Raw("DELETE FROM write_intents WHERE "+where+
		" RETURNING id, owner, task_id, step_id, name, actor, payload, created_at", args...).Scan(&rows).Error
	if err != nil {
		return 0, fmt.Errorf("intent: take abandoned intents: %w", err)
	}
	return recordUnknownOf(ctx, tx, rows, reason)
}

// recordUnknownOf writes the unknown feed rows of intents, inside tx.
func recordUnknownOf(ctx context.Context, tx *gorm.DB, rows []models.WriteIntent, reason string) (int, error) {
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
	q := tx.WithContext(ctx).Model(&models.Task{}).Where("id IN ?", tasks)
	if tx.Dialector.Name() == "postgres" {
		// Kept until the commit, so that the task is still there when its
		// rows are (feed.Insert checks the same).
		q = q.Clauses(clause.Locking{Strength: "KEY SHARE"})
	}
	if err := q.Pluck("id", &liveTasks).Error; err != nil {
		return 0, fmt.Errorf("intent: find tasks: %w", err)
	}
	if err := tx.WithContext(ctx).Model(&models.Step{}).Where("id IN ?", steps).Pluck("id", &liveSteps).Error; err != nil {
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
