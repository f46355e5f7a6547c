// Package feed writes and pages a task's feed events so that the events
// cursor never skips one. Feed ids come from a sequence, and transactions
// commit out of id order: without care, a poller that has seen id 12 could
// move its cursor past an id 11 that commits a moment later. On Postgres,
// every insert therefore first takes a shared advisory lock of its task
// (before its id is drawn), and a reader takes the task's lock exclusively:
// it reads only once every id already drawn for the task has committed.
// SQLite serialises writers, so there ids commit in order already.
//
// Feed rows have no foreign keys on Postgres (each cost every row two
// lookups and lock): a task's delete deletes its rows (a trigger, migration
// 0011), and every writer, in the statement that takes the task's feed
// lock, locks the task's row FOR KEY SHARE, so that a row is never written
// for a task deleted meanwhile (the delete either waits for the writer's
// commit, whose rows it then deletes, or went first, and the row is not
// written).
package feed

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"gorm.io/gorm"
	"gorm.io/gorm/clause"

	"github.com/appruntime/appruntime/models"
)

// lockKey names a task's feed lock; hashtext spreads tasks over the advisory
// lock space (a collision only makes two tasks wait for each other).
const lockKey = "hashtext('feed:' || k)"

func isPostgres(db *gorm.DB) bool { return db.Dialector.Name() == "postgres" }

// ErrTaskGone is the cause of an Insert refused because a row's task does
// not exist (deleted meanwhile, or never there).
var ErrTaskGone = errors.New("feed: the task does not exist")

// insertLocks takes the feed locks of the tasks in $1 (a sorted text[] of
// task ids), shared, and locks the tasks' rows FOR KEY SHARE, answering how
// many of the tasks exist.
const insertLocks = `SELECT (SELECT count(*) FROM (SELECT pg_advisory_xact_lock_shared(` + lockKey + `) FROM unnest($1::text[]) AS k) AS l),
	(SELECT count(*) FROM (SELECT 1 FROM tasks WHERE id = ANY($1::text[]::uuid[]) FOR KEY SHARE) AS t)`

// Insert writes rows inside tx, which must be a transaction (Postgres keeps
// the task locks until it ends), and the outbox rows of the webhook events
// they are pushed as (push). dedupe makes rows whose dedupe_key exists
// already insert nothing. A row whose task does not exist fails the insert
// (ErrTaskGone), as the task's key did.
func Insert(ctx context.Context, tx *gorm.DB, dedupe bool, rows ...models.FeedEvent) error {
	if len(rows) == 0 {
		return nil
	}
	tx = tx.WithContext(ctx)
	if isPostgres(tx) {
		// Task ids are UUIDs, so the array literal needs no quoting.
		tasks := TaskIDs(rows...)
		var locked, found int
		if err := tx.Raw(insertLocks, "{"+strings.Join(tasks, ",")+"}").Row().Scan(&locked, &found); err != nil {
			return fmt.Errorf("feed: lock tasks: %w", err)
		}
		if found != len(tasks) {
			return fmt.Errorf("feed: insert: %w", ErrTaskGone)
		}
	}
	if dedupe {
		tx = tx.Clauses(dedupeConflict(tx))
	}
	if err := tx.Create(&rows).Error; err != nil {
		return fmt.Errorf("feed: insert: %w", err)
	}
	if dedupe {
		// rows a conflict skipped are not known here; no pushed type is
		// inserted with dedupe (only task_resumed is)
		return nil
	}
	return push(tx, rows)
}

// dedupeConflict is the ON CONFLICT of an insert that dedupes. Postgres's
// index of dedupe_key holds only the keys that are set (migration 0012), so
// the conflict target names its predicate; SQLite's is the column's UNIQUE
// constraint.
func dedupeConflict(tx *gorm.DB) clause.OnConflict {
	c := clause.OnConflict{Columns: []clause.Column{{Name: "dedupe_key"}}, DoNothing: true}
	if isPostgres(tx) {
		c.TargetWhere = clause.Where{Exprs: []clause.Expression{clause.Expr{SQL: "dedupe_key IS NOT NULL"}}}
	}
	return c
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
// Such a statement also inserts only rows of tasks it locks with
// LiveTasks.
func LockedWhere(param string) string {
	return "(SELECT count(*) FROM (SELECT pg_advisory_xact_lock_shared(" + lockKey + ") FROM unnest(" + param + "::text[]) AS k) AS l) >= 0"
}

// LiveTasks is the query of a CTE of the tasks in param (a text[]
// parameter of task ids) that exist, locked FOR KEY SHARE until the
// statement commits: an INSERT INTO feed_events … SELECT takes its rows'
// tasks from it, so that no row is written for a deleted task.
func LiveTasks(param string) string {
	return "SELECT id FROM tasks WHERE id = ANY(" + param + "::text[]::uuid[]) FOR KEY SHARE"
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
