package intent

import (
	"bytes"
	"context"
	"database/sql"
	"fmt"
	"strconv"
	"time"
	"unicode/utf8"

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
	Type string
	// Payload is the feed row's payload. Nil, it is the intent's own record
	// with "rows_affected": RowsAffected added, which the database builds
	// from the intent it holds: the record, which can be as large as the
	// row written, neither travels nor is parsed a second time.
	Payload      models.JSON
	RowsAffected int64
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

// The statements of Apply on Postgres. The records of a part travel as one
// JSON array (json_to_recordset): the driver sends one text parameter, built
// by appending, with each payload (JSON already) embedded as it is, where
// one array parameter per column would cost an allocation per element.
// Each answers the ids of what it did not do (normally none, so a busy batch
// reads nothing back).
var (
	// openSQL records intents, but not those of a step whose await is
	// settled.
	openSQL = `WITH i AS (
    SELECT * FROM json_to_recordset($2::text::json)
        AS i (id uuid, owner uuid, task_id uuid, step_id text, name text, actor text, payload jsonb)),
opened AS (
    INSERT INTO write_intents (id, owner, task_id, step_id, name, actor, payload, created_at)
    SELECT i.id, i.owner, i.task_id, i.step_id::uuid, i.name, i.actor, i.payload, $1 FROM i
    WHERE NOT EXISTS (SELECT 1 FROM task_awaits a WHERE a.task_id = i.task_id AND a.source_type = '` + models.AwaitSourceAppTool + `'
        AND a.correlation_key = i.step_id AND a.status <> '` + models.AwaitPending + `')
    RETURNING id)
SELECT id FROM i WHERE id NOT IN (SELECT id FROM opened)`

	// settleSQL drops intents and turns others into their feed rows, which
	// take their tasks' feed locks before their ids are drawn
	// (feed.LockedWhere); data-modifying CTEs all run, whatever the final
	// SELECT reads.
	settleSQL = `WITH c AS (
    SELECT * FROM json_to_recordset($3::text::json) AS c (id uuid, type text, payload jsonb, rows_affected bigint)),
dropped AS (
    DELETE FROM write_intents WHERE id = ANY($2::text[]::uuid[])),
completed AS (
    DELETE FROM write_intents w USING c
    WHERE w.id = c.id
    RETURNING w.id, w.task_id, w.step_id, c.type, w.name,
        coalesce(c.payload, w.payload || jsonb_build_object('rows_affected', c.rows_affected)) AS payload, w.actor),
fed AS (
    INSERT INTO feed_events (task_id, step_id, type, name, payload, actor, created_at)
    SELECT task_id, step_id, type, name, payload, actor, $1 FROM completed
    WHERE ` + feed.LockedWhere("$4") + `)
SELECT id FROM c WHERE id NOT IN (SELECT id FROM completed)`
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
	if len(b.Open) > 0 {
		if err := queryIDs(ctx, q, out.Refused, openSQL, now, string(openRecords(b.Open))); err != nil {
			return Applied{}, err
		}
	}
	if m := len(b.Complete); m > 0 || len(b.Drop) > 0 {
		tasks := make([]string, m)
		for i, c := range b.Complete {
			tasks[i] = c.TaskID
		}
		drop := b.Drop
		if drop == nil {
			drop = []string{}
		}
		if err := queryIDs(ctx, q, out.Missing, settleSQL, now, drop, string(completionRecords(b.Complete)), feed.LockOrder(tasks)); err != nil {
			return Applied{}, err
		}
	}
	return out, nil
}

// What a record of openRecords and of completionRecords takes besides its
// variable strings: keys, quotes and separators, and the uuids (36 bytes
// each). Too small an estimate grows the buffer, a copy per growth.
const (
	openRecordSize       = 4*36 + 96
	completionRecordSize = 36 + 72
)

// openRecords is open as openSQL's JSON array of records.
func openRecords(open []models.WriteIntent) []byte {
	return records(open, func(in models.WriteIntent) int {
		return openRecordSize + len(in.Name) + len(in.Actor) + len(in.Payload)
	},
		func(buf []byte, in models.WriteIntent) []byte {
			buf = appendField(buf, '{', "id", in.ID)
			buf = appendField(buf, ',', "owner", in.Owner)
			buf = appendField(buf, ',', "task_id", in.TaskID)
			buf = appendField(buf, ',', "step_id", in.StepID)
			buf = appendField(buf, ',', "name", in.Name)
			buf = appendField(buf, ',', "actor", in.Actor)
			return appendPayload(buf, in.Payload)
		})
}

// completionRecords is complete as settleSQL's JSON array of records.
func completionRecords(complete []Completion) []byte {
	return records(complete, func(c Completion) int { return completionRecordSize + len(c.Type) + len(c.Payload) },
		func(buf []byte, c Completion) []byte {
			buf = appendField(buf, '{', "id", c.ID)
			buf = appendField(buf, ',', "type", c.Type)
			buf = append(buf, `,"rows_affected":`...)
			buf = strconv.AppendInt(buf, c.RowsAffected, 10)
			return appendPayload(buf, c.Payload)
		})
}

// records is items as one JSON array, each appended by appendRecord into a
// buffer sized by size (an estimate of each record's length).
func records[T any](items []T, size func(T) int, appendRecord func([]byte, T) []byte) []byte {
	n := 2
	for _, it := range items {
		n += size(it)
	}
	buf := make([]byte, 0, n)
	buf = append(buf, '[')
	for i, it := range items {
		if i > 0 {
			buf = append(buf, ',')
		}
		buf = appendRecord(buf, it)
	}
	return append(buf, ']')
}

// appendField appends sep, then "key": and value as a JSON string.
func appendField(buf []byte, sep byte, key, value string) []byte {
	buf = append(buf, sep, '"')
	buf = append(buf, key...)
	buf = append(buf, '"', ':')
	return appendJSONString(buf, value)
}

// appendPayload appends ,"payload": and payload (JSON already; absent is
// null) and closes the record.
func appendPayload(buf []byte, payload models.JSON) []byte {
	buf = append(buf, `,"payload":`...)
	if len(payload) == 0 {
		buf = append(buf, "null"...)
	} else {
		buf = append(buf, payload...)
	}
	return append(buf, '}')
}

// appendJSONString appends s as a JSON string: quotes, backslashes and
// control characters escaped, invalid UTF-8 replaced by U+FFFD (as
// encoding/json does).
func appendJSONString(buf []byte, s string) []byte {
	const hex = "0123456789abcdef"
	buf = append(buf, '"')
	for i := 0; i < len(s); {
		c := s[i]
		switch {
		case c == '"' || c == '\\':
			buf = append(buf, '\\', c)
			i++
		case c < 0x20:
			buf = append(buf, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xf])
			i++
		case c < utf8.RuneSelf:
			buf = append(buf, c)
			i++
		default:
			r, size := utf8.DecodeRuneInString(s[i:])
			if r == utf8.RuneError && size == 1 {
				buf = append(buf, "\\ufffd"...)
			} else {
				buf = append(buf, s[i:i+size]...)
			}
			i += size
		}
	}
	return append(buf, '"')
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
		payload := c.Payload
		if payload == nil {
			payload = withRowsAffected(in.Payload, c.RowsAffected)
		}
		if err := feed.Insert(ctx, tx, false, feedRow(in, c.Type, payload, now)); err != nil {
			return fmt.Errorf("intent: complete: %w", err)
		}
	}
	return nil
}

// withRowsAffected is the JSON object payload with "rows_affected": n added
// at its end, without decoding and encoding the row it holds again.
func withRowsAffected(payload models.JSON, n int64) models.JSON {
	out := make([]byte, 0, len(payload)+32)
	out = append(out, bytes.TrimSuffix(bytes.TrimSpace(payload), []byte("}"))...)
	if len(bytes.TrimSpace(out[1:])) > 0 {
		out = append(out, ',')
	}
	out = append(out, `"rows_affected":`...)
	out = strconv.AppendInt(out, n, 10)
	return append(out, '}')
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
