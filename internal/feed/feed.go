// Package feed writes and pages a task's feed events so that the events
// cursor never skips one. Feed ids come from a sequence, and transactions
// commit out of id order: without care, a poller that has seen id 12 could
// move its cursor past an id 11 that commits a moment later. On Postgres,
// every insert therefore first takes a shared advisory lock of its task
// (before its id is drawn), and a reader takes the task's lock exclusively:
// it reads only once every id already drawn for the task has committed.
// SQLite serialises writers, so there ids commit in order already.
package feed

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"gorm.io/gorm"
	"gorm.io/gorm/clause"

	"github.com/appruntime/appruntime/models"
)

// lockKey names a task's feed lock; hashtext spreads tasks over the advisory
// lock space (a collision only makes two tasks wait for each other).
const lockKey = "hashtext('feed:' || k)"

func isPostgres(db *gorm.DB) bool { return db.Dialector.Name() == "postgres" }

// Insert writes rows inside tx, which must be a transaction (Postgres keeps
// the task locks until it ends). dedupe makes rows whose dedupe_key exists
// already insert nothing.
func Insert(ctx context.Context, tx *gorm.DB, dedupe bool, rows ...models.FeedEvent) error {
	if len(rows) == 0 {
		return nil
	}
	tx = tx.WithContext(ctx)
	if isPostgres(tx) {
		// Task ids are UUIDs, so the array literal needs no quoting.
		array := "{" + strings.Join(TaskIDs(rows...), ",") + "}"
		if err := tx.Exec("SELECT pg_advisory_xact_lock_shared("+lockKey+") FROM unnest(?::text[]) AS k", array).Error; err != nil {
			return fmt.Errorf("feed: lock tasks: %w", err)
		}
	}
	if dedupe {
		tx = tx.Clauses(clause.OnConflict{Columns: []clause.Column{{Name: "dedupe_key"}}, DoNothing: true})
	}
	if err := tx.Create(&rows).Error; err != nil {
		return fmt.Errorf("feed: insert: %w", err)
	}
	return nil
}

// Since returns up to limit events of taskID with an id greater than after,
// oldest first, waiting on Postgres until no lower id of the task can still
// commit.
func Since(ctx context.Context, db *gorm.DB, taskID string, after int64, limit int) ([]models.FeedEvent, error) {
	var rows []models.FeedEvent
	err := db.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		if isPostgres(tx) {
			if err := tx.Exec("SELECT pg_advisory_xact_lock("+lockKey+") FROM (SELECT ?::text AS k) AS t", taskID).Error; err != nil {
				return fmt.Errorf("feed: lock task: %w", err)
			}
		}
		return tx.Where("task_id = ? AND id > ?", taskID, after).Order("id").Limit(limit).Find(&rows).Error
	})
	if err != nil {
		return nil, fmt.Errorf("feed: list events: %w", err)
	}
	return rows, nil
}

// LockedWhere is the WHERE condition that makes an INSERT INTO feed_events
// … SELECT of one statement keep the events cursor gap-free on Postgres:
// param names a text[] parameter holding the ids of the tasks inserted into.
// The locks are taken by an InitPlan, which runs before the first row (and
// so the first id) is produced, and are held until the statement commits.
func LockedWhere(param string) string {
	return "(SELECT count(*) FROM (SELECT pg_advisory_xact_lock_shared(" + lockKey + ") FROM unnest(" + param + "::text[]) AS k) AS l) >= 0"
}

// TaskIDs returns the distinct task ids of rows, sorted: the lock array
// LockedWhere takes (sorted, so that writers lock in one order).
func TaskIDs(rows ...models.FeedEvent) []string {
	ids := make([]string, len(rows))
	for i, r := range rows {
		ids[i] = r.TaskID
	}
	return LockOrder(ids)
}

// LockOrder sorts the task ids ids in place and returns them without
// repeats: the lock array LockedWhere takes.
func LockOrder(ids []string) []string {
	slices.Sort(ids)
	return slices.Compact(ids)
}

// appendSQL inserts rows given as parallel arrays. It is one fixed text, so
// the driver prepares it once per connection whatever the batch size.
var appendSQL = `INSERT INTO feed_events (task_id, step_id, type, name, payload, actor, dedupe_key, created_at)
SELECT * FROM unnest($1::uuid[], $2::uuid[], $3::text[], $4::text[], $5::jsonb[], $6::text[], $7::text[], $8::timestamptz[])
WHERE ` + LockedWhere("$9")

// Append writes rows as one autocommitted statement, for writers outside a
// transaction (the runtime's group commit): one round trip, with the same
// guarantee as Insert.
func Append(ctx context.Context, db *gorm.DB, rows ...models.FeedEvent) error {
	if len(rows) == 0 {
		return nil
	}
	db = db.WithContext(ctx)
	if !isPostgres(db) {
		if err := db.Create(&rows).Error; err != nil {
			return fmt.Errorf("feed: insert: %w", err)
		}
		return nil
	}
	n := len(rows)
	taskIDs, stepIDs := make([]string, n), make([]*string, n)
	types, names, actors := make([]string, n), make([]string, n), make([]string, n)
	payloads, dedupe := make([]*string, n), make([]*string, n)
	created := make([]time.Time, n)
	now := time.Now().UTC()
	for i, r := range rows {
		taskIDs[i], stepIDs[i], types[i], names[i], actors[i], dedupe[i] = r.TaskID, r.StepID, r.Type, r.Name, r.Actor, r.DedupeKey
		if len(r.Payload) > 0 {
			p := string(r.Payload)
			payloads[i] = &p
		}
		created[i] = r.CreatedAt
		if created[i].IsZero() {
			created[i] = now
		}
	}
	tasks := TaskIDs(rows...)
	sqlDB, err := db.DB()
	if err != nil {
		return fmt.Errorf("feed: %w", err)
	}
	_, err = sqlDB.ExecContext(ctx, appendSQL, taskIDs, stepIDs, types, names, payloads, actors, dedupe, created, tasks)
	if err != nil {
		return fmt.Errorf("feed: insert: %w", err)
	}
	return nil
}
