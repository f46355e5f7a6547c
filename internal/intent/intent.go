package intent

import (
	"context"
	"database/sql"
	"fmt"
	"time"

	"gorm.io/gorm"

	"github.com/appruntime/appruntime/internal/feed"
	"github.com/appruntime/appruntime/models"
)

// Batch is what one Apply records: intents to open, intents to drop (their
// write failed and committed nothing) and intents to complete (their write
// committed: each becomes its feed row).
type Batch struct {
	// Open are new intents. One whose step's await is no longer pending is
	// not recorded: the step's sessions may no longer write
	// (ARCHITECTURE.md decision 7).
	Open []models.WriteIntent
	// Drop are ids of intents whose write did not commit.
	Drop []string
	// Complete are intents whose write was answered.
	Complete []Completion
}

// Completion turns an intent into its feed row.
type Completion struct {
	ID     string
	TaskID string // the intent's task (its feed lock is taken)
	// Type is the feed row's type: models.FeedAgentAction for a write the
	// data source committed, models.FeedAgentActionUnknown for one whose
	// answer was lost (the connection broke while the commit was in flight).
	Type    string
	Payload models.JSON
}

// Applied reports, by intent id, what an Apply did not do (normally
// nothing, so a busy batch reads no rows back).
type Applied struct {
	// Refused holds the Open intents that were not recorded because their
	// step's await is settled.
	Refused map[string]bool
	// Missing holds the Complete intents that were no longer there (a Sweep
	// had recorded them as unknown): no feed row was written for them.
	Missing map[string]bool
}

func (b Batch) empty() bool { return len(b.Open)+len(b.Drop)+len(b.Complete) == 0 }

// Apply records b: on Postgres in one autocommitted statement for its Open
// part and one for the rest (a round trip each, which is what lets the
// runtime group-commit every /write's intent and feed row), on SQLite in one
// transaction. Each part is all or nothing: on an error (a task deleted
// meanwhile fails its feed row) nothing of that part is recorded.
func Apply(ctx context.Context, db *gorm.DB, b Batch) (Applied, error) {
	out := Applied{Refused: map[string]bool{}, Missing: map[string]bool{}}
	if b.empty() {
		return out, nil
	}
	if db.Dialector.Name() == "postgres" {
		sqlDB, err := db.DB()
		if err != nil {
			return Applied{}, fmt.Errorf("intent: %w", err)
		}
		return applyPostgres(ctx, sqlDB, b, out)
	}
	err := db.WithContext(ctx).Transaction(func(tx *gorm.DB) error { return applyTx(ctx, tx, b, out) })
	if err != nil {
		return Applied{}, err
	}
	return out, nil
}

// The statements of Apply on Postgres. Every array is text[] (cast in
// SQL): the driver sends those in binary, where uuid[] or jsonb[] would be
// quoted and escaped element by element. Each answers the ids of what it
// did not do (normally none, so a busy batch reads nothing back).
var (
	// openSQL records intents, but not those of a step whose await is
	// settled.
	openSQL = `WITH opened AS (
    INSERT INTO write_intents (id, owner, task_id, step_id, name, actor, payload, created_at)
    SELECT i.id::uuid, i.owner::uuid, i.task_id::uuid, i.step_id::uuid, i.name, i.actor, i.payload::jsonb, $1
    FROM unnest($2::text[], $3::text[], $4::text[], $5::text[], $6::text[], $7::text[], $8::text[])
        AS i (id, owner, task_id, step_id, name, actor, payload)
    WHERE NOT EXISTS (SELECT 1 FROM task_awaits a WHERE a.task_id = i.task_id::uuid AND a.source_type = '` + models.AwaitSourceAppTool + `'
        AND a.correlation_key = i.step_id AND a.status <> '` + models.AwaitPending + `')
    RETURNING id)
SELECT id FROM unnest($2::text[]) AS i (id) WHERE i.id::uuid NOT IN (SELECT id FROM opened)`

	// settleSQL drops intents and turns others into their feed rows, which
	// take their tasks' feed locks before their ids are drawn
	// (feed.LockedWhere); data-modifying CTEs all run, whatever the final
	// SELECT reads.
	settleSQL = `WITH dropped AS (
    DELETE FROM write_intents WHERE id = ANY($2::text[]::uuid[])),
completed AS (
    DELETE FROM write_intents w USING unnest($3::text[], $4::text[], $5::text[]) AS c (id, type, payload)
    WHERE w.id = c.id::uuid
    RETURNING w.id, w.task_id, w.step_id, c.type, w.name, c.payload::jsonb AS payload, w.actor),
fed AS (
    INSERT INTO feed_events (task_id, step_id, type, name, payload, actor, created_at)
    SELECT task_id, step_id, type, name, payload, actor, $1 FROM completed
    WHERE ` + feed.LockedWhere("$6") + `)
SELECT id FROM unnest($3::text[]) AS c (id) WHERE c.id::uuid NOT IN (SELECT id FROM completed)`
)

// Querier runs a query: a *sql.DB, or a *sql.Conn of the caller's with
// settings of its own.
type Querier interface {
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
}

// ApplyOn is Apply on Postgres through q (its commits durable or not as
// q's synchronous_commit says).
func ApplyOn(ctx context.Context, q Querier, b Batch) (Applied, error) {
	return applyPostgres(ctx, q, b, Applied{Refused: map[string]bool{}, Missing: map[string]bool{}})
}

// applyPostgres runs openSQL for b's Open and settleSQL for the rest: each
// part is all or nothing, but two parts are two commits (the runtime's
// journal never mixes them in one batch).
func applyPostgres(ctx context.Context, q Querier, b Batch, out Applied) (Applied, error) {
	now := time.Now().UTC()
	if n := len(b.Open); n > 0 {
		ids, owners, tasks, steps := make([]string, n), make([]string, n), make([]string, n), make([]string, n)
		names, actors, payloads := make([]string, n), make([]string, n), make([]string, n)
		for i, in := range b.Open {
			ids[i], owners[i], tasks[i], steps[i] = in.ID, in.Owner, in.TaskID, in.StepID
			names[i], actors[i], payloads[i] = in.Name, in.Actor, string(in.Payload)
		}
		if err := queryIDs(ctx, q, out.Refused, openSQL, now, ids, owners, tasks, steps, names, actors, payloads); err != nil {
			return Applied{}, err
		}
	}
	if m := len(b.Complete); m > 0 || len(b.Drop) > 0 {
		ids, types, payloads := make([]string, m), make([]string, m), make([]string, m)
		rows := make([]models.FeedEvent, m)
		for i, c := range b.Complete {
			ids[i], types[i], payloads[i] = c.ID, c.Type, string(c.Payload)
			rows[i].TaskID = c.TaskID
		}
		drop := b.Drop
		if drop == nil {
			drop = []string{}
		}
		if err := queryIDs(ctx, q, out.Missing, settleSQL, now, drop, ids, types, payloads, feed.TaskIDs(rows...)); err != nil {
			return Applied{}, err
		}
	}
	return out, nil
}

// queryIDs runs a statement that answers ids, and adds them to into.
func queryIDs(ctx context.Context, q Querier, into map[string]bool, query string, args ...any) error {
	res, err := q.QueryContext(ctx, query, args...)
	if err != nil {
		return fmt.Errorf("intent: apply: %w", err)
	}
	defer res.Close()
	for res.Next() {
		var id string
		if err := res.Scan(&id); err != nil {
			return fmt.Errorf("intent: apply: %w", err)
		}
		into[id] = true
	}
	if err := res.Err(); err != nil {
		return fmt.Errorf("intent: apply: %w", err)
	}
	return nil
}

// applyTx is Apply inside a transaction, statement by statement (SQLite).
func applyTx(ctx context.Context, tx *gorm.DB, b Batch, out Applied) error {
	tx = tx.WithContext(ctx)
	now := time.Now().UTC()
	for _, in := range b.Open {
		settled, err := AwaitSettled(ctx, tx, in.TaskID, in.StepID)
		if err != nil {
			return err
		}
		if settled {
			out.Refused[in.ID] = true
			continue
		}
		in.CreatedAt = now
		if err := tx.Create(&in).Error; err != nil {
			return fmt.Errorf("intent: open: %w", err)
		}
	}
	if len(b.Drop) > 0 {
		if err := tx.Where("id IN ?", b.Drop).Delete(&models.WriteIntent{}).Error; err != nil {
			return fmt.Errorf("intent: drop: %w", err)
		}
	}
	for _, c := range b.Complete {
		var in models.WriteIntent
		res := tx.Where("id = ?", c.ID).Limit(1).Find(&in)
		if res.Error != nil {
			return fmt.Errorf("intent: complete: %w", res.Error)
		}
		if res.RowsAffected == 0 {
			out.Missing[c.ID] = true
			continue
		}
		if err := tx.Where("id = ?", in.ID).Delete(&models.WriteIntent{}).Error; err != nil {
			return fmt.Errorf("intent: complete: %w", err)
		}
		if err := feed.Insert(ctx, tx, false, feedRow(in, c.Type, c.Payload, now)); err != nil {
			return fmt.Errorf("intent: complete: %w", err)
		}
	}
	return nil
}

// feedRow is the feed row an intent becomes.
func feedRow(in models.WriteIntent, typ string, payload models.JSON, at time.Time) models.FeedEvent {
	step := in.StepID
	return models.FeedEvent{TaskID: in.TaskID, StepID: &step, Type: typ, Name: in.Name, Payload: payload,
		Actor: in.Actor, CreatedAt: at}
}

// AwaitSettled reports whether the app-tool await of a step is no longer
// pending (resolved or aborted). A step that never parked has no await and
// is not settled.
func AwaitSettled(ctx context.Context, db *gorm.DB, taskID, stepID string) (bool, error) {
	var n int64
	err := db.WithContext(ctx).Model(&models.TaskAwait{}).
		Where("task_id = ? AND source_type = ? AND correlation_key = ? AND status <> ?",
			taskID, models.AwaitSourceAppTool, stepID, models.AwaitPending).
		Count(&n).Error
	if err != nil {
		return false, fmt.Errorf("intent: check await: %w", err)
	}
	return n > 0, nil
}

// Forget deletes the intent id inside tx, the transaction that records its
// write's outcome itself (an action's). An intent already gone (a sweep
// recorded it as unknown) is no error.
func Forget(ctx context.Context, tx *gorm.DB, id string) error {
	if err := tx.WithContext(ctx).Where("id = ?", id).Delete(&models.WriteIntent{}).Error; err != nil {
		return fmt.Errorf("intent: forget: %w", err)
	}
	return nil
}
