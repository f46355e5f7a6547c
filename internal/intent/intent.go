package intent

import (
	"bytes"
	"context"
	"database/sql"
	"fmt"
	"slices"
	"strconv"
	"time"
	"unicode/utf8"

	"gorm.io/gorm"
	"gorm.io/gorm/clause"

	"github.com/appruntime/appruntime/internal/feed"
	"github.com/appruntime/appruntime/models"
)

// Batch is what one Apply records: intents opened together (one
// WriteIntentBatch row), intents whose writes were answered (each becomes
// its feed row) and the batches all of whose intents are recorded or
// dropped (their rows are deleted). A dropped intent (its write did not
// commit) needs no statement: its batch's row is simply deleted with the
// others' once they are recorded.
type Batch struct {
	// ID names the batch of Open; it must be set when Open is not empty.
	ID string
	// Open are new intents, all of one owner. One whose step's await is no
	// longer pending is not recorded: the step's sessions may no longer
	// write (docs/architecture.md#7-one-approval).
	Open []models.WriteIntent
	// Complete are intents whose write was answered.
	Complete []Completion
	// Done are ids of batches whose every intent was completed or dropped.
	Done []string
}

// Completion turns an intent into its feed row.
type Completion struct {
	// Intent is the intent as opened (its BatchID set).
	Intent models.WriteIntent
	// Type is the feed row's type: models.FeedAgentAction for a write the
	// data source committed, models.FeedAgentActionUnknown for one whose
	// answer was lost (the connection broke while the commit was in flight).
	Type string
	// Payload is the feed row's payload. Nil, it is the intent's own record
	// with "rows_affected": RowsAffected added.
	Payload      models.JSON
	RowsAffected int64
}

// payload is the feed row's payload.
func (c Completion) payload() models.JSON {
	if c.Payload != nil {
		return c.Payload
	}
	return withRowsAffected(c.Intent.Payload, c.RowsAffected)
}

// Applied reports, by intent id, what an Apply did not do (normally
// nothing, so a busy batch reads no rows back).
type Applied struct {
	// Refused holds the Open intents that were not recorded because their
	// step's await is settled.
	Refused map[string]bool
	// Missing holds the Complete intents whose feed row was not written:
	// their batch was gone (a Sweep had recorded them as unknown) or their
	// task was (deleted meanwhile).
	Missing map[string]bool
}

func (b Batch) empty() bool { return len(b.Open)+len(b.Complete)+len(b.Done) == 0 }

// Apply records b: on Postgres in one autocommitted statement for its Open
// part and one for the rest (a round trip each, which is what lets the
// runtime group-commit every /write's intent and feed row), on SQLite in one
// transaction. Each part is all or nothing.
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
		if !Pushes(b) {
			return applyPostgres(ctx, sqlDB, b, out, new(Scratch), settleSQL)
		}
		// settleSQL writes feed rows, not the outbox rows of their webhook
		// events, which must commit with them: such a batch (rare: a write
		// whose answer was lost) settles in a transaction, through
		// feed.Insert, which writes both.
		if err := openPostgres(ctx, sqlDB, b, time.Now().UTC(), out.Refused, new(Scratch)); err != nil {
			return Applied{}, err
		}
		b.Open = nil
	}
	err := db.WithContext(ctx).Transaction(func(tx *gorm.DB) error { return applyTx(ctx, tx, b, out) })
	if err != nil {
		return Applied{}, err
	}
	return out, nil
}

// Pushes reports whether one of b's completions writes a feed row that is
// pushed to the task's agent as a webhook event (feed.PushedType: an
// outcome unknown). Apply settles such a batch in a transaction on every
// dialect.
func Pushes(b Batch) bool {
	for _, c := range b.Complete {
		if feed.PushedType(c.Type, nil) != "" {
			return true
		}
	}
	return false
}

// The statements of Apply on Postgres. The records of a part travel as one
// JSON array, a text parameter built by appending, with each payload (JSON
// already) embedded as it is.
var (
	// openSQL records a batch ($2, of owner $5, its records $6) unless one
	// of its steps (the pairs of $3 and $4) has a settled await: then it
	// records nothing and answers those steps, and the caller opens the
	// rest again without their intents. The records are kept as text: only
	// a sweep reads them.
	openSQL = `WITH p AS (
    SELECT * FROM unnest($3::text[]::uuid[], $4::text[]) AS p (task_id, step_id)),
refused AS (
    SELECT p.task_id, p.step_id FROM p
    WHERE EXISTS (SELECT 1 FROM task_awaits a WHERE a.task_id = p.task_id AND a.source_type = '` + models.AwaitSourceAppTool + `'
        AND a.correlation_key = p.step_id AND a.status <> '` + models.AwaitPending + `')),
stored AS (
    INSERT INTO write_intent_batches (id, owner, created_at, feed_after, intents)
    SELECT $2, $5, $1, (SELECT CASE WHEN is_called THEN last_value ELSE 0 END FROM feed_events_id_seq), $6
    WHERE NOT EXISTS (SELECT 1 FROM refused))
SELECT task_id::text, step_id FROM refused`

	// settleSQL writes the feed rows of completions ($2) and deletes the
	// batches that are done ($5). A row is written only when its batch is
	// still there ($4, locked FOR KEY SHARE: a sweep taking the batch waits,
	// or went first and recorded the intent as unknown) and so is its task
	// ($3, feed.LiveTasks, whose feed locks are taken before the row's id is
	// drawn, feed.LockedWhere). Data-modifying CTEs all run, whatever the
	// final SELECT reads; it answers the completions not written. A payload
	// (a JSON object, which json_to_recordset hands over as sent) is read as
	// text and cast: json_to_recordset filling a jsonb column itself took
	// twice the time (measured on 40-row batches: 7.2 against 3.8 µs a row).
	settleSQL = settleStatement("", "")

	// resettleSQL is settleSQL tried again after a try whose answer was lost
	// (its connection broke with the statement in flight, so it may have
	// committed): a completion whose intent a feed row names already is not
	// written twice, and counts as written when that row is its own type
	// (not a sweep's unknown one). Only a retry pays for the look-up, by the
	// feed's (task_id, id) index (ReapplyOn).
	resettleSQL = settleStatement(
		" AND NOT EXISTS (SELECT 1 FROM feed_events f WHERE f.task_id = c.task_id AND f.intent_id = c.intent_id)",
		" AND NOT EXISTS (SELECT 1 FROM feed_events f WHERE f.task_id = c.task_id AND f.intent_id = c.intent_id AND f.type = c.type)")
)

// settleStatement is settleSQL with unwritten added to the condition of
// each feed row it writes and mine to the condition of each completion it
// answers as not written.
func settleStatement(unwritten, mine string) string {
	return `WITH c AS (
    SELECT * FROM json_to_recordset($2::text::json)
        AS c (intent_id uuid, batch_id uuid, task_id uuid, step_id uuid, type text, name text, actor text, payload text)),
t AS (` + feed.LiveTasks("$3") + `),
b AS (
    SELECT id FROM write_intent_batches WHERE id = ANY($4::text[]::uuid[]) FOR KEY SHARE),
gone AS (
    DELETE FROM write_intent_batches WHERE id = ANY($5::text[]::uuid[])),
fed AS (
    INSERT INTO feed_events (task_id, step_id, type, name, payload, actor, intent_id, created_at)
    SELECT c.task_id, c.step_id, c.type, c.name, c.payload::jsonb, c.actor, c.intent_id, $1 FROM c
    WHERE c.task_id IN (SELECT id FROM t) AND c.batch_id IN (SELECT id FROM b) AND ` + feed.LockedWhere("$3") + unwritten + `
    RETURNING intent_id)
SELECT intent_id::text FROM c WHERE intent_id NOT IN (SELECT intent_id FROM fed)` + mine
}

// Querier runs a query: a *sql.DB, or a *sql.Conn of the caller's with
// settings of its own.
type Querier interface {
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
}

// Scratch is the memory a writer builds its batches' records in, kept from
// one batch to the next: a busy api writes a batch every few hundred µs, and
// each one's records (a few KB) were garbage once sent. Not for concurrent
// use; the zero value is ready.
type Scratch struct{ buf []byte }

// scratchKeep is the largest buffer a Scratch keeps after a batch: the
// records of a batch of large payloads (a batch holds up to 256 intents, a
// body up to 256 KiB) are not held for the next ones.
const scratchKeep = 256 << 10

// records returns the buffer to build a batch's records in, empty.
func (s *Scratch) records() []byte { return s.buf[:0] }

// keep takes back buf, the records just sent, for the next batch.
func (s *Scratch) keep(buf []byte) {
	if cap(buf) > scratchKeep {
		buf = nil
	}
	s.buf = buf
}

// ApplyOn is Apply on Postgres through q (its commits durable or not as
// q's synchronous_commit says), building its records in s.
func ApplyOn(ctx context.Context, q Querier, b Batch, s *Scratch) (Applied, error) {
	return applyPostgres(ctx, q, b, Applied{Refused: map[string]bool{}, Missing: map[string]bool{}}, s, settleSQL)
}

// ReapplyOn applies again on conn a batch of completions and finished
// batches (no Open) whose first Apply may have committed: its connection
// broke with the statement in flight, so its answer was lost. Nothing is
// written twice (resettleSQL), so it may be retried until it lands. It
// first waits for what the first try may still hold (its backend may
// outlive its client's connection): the batches' rows are locked in a
// transaction of their own before the statement reads the feed, which it
// then sees as that try left it.
func ReapplyOn(ctx context.Context, conn *sql.Conn, b Batch, s *Scratch) (Applied, error) {
	if len(b.Open) > 0 {
		return Applied{}, fmt.Errorf("intent: opens are not applied again")
	}
	tx, err := conn.BeginTx(ctx, nil)
	if err != nil {
		return Applied{}, fmt.Errorf("intent: apply again: %w", err)
	}
	defer tx.Rollback() //nolint:errcheck // a no-op once committed
	batches := append(batchesOf(b.Complete), b.Done...)
	if _, err := tx.ExecContext(ctx, "SELECT 1 FROM write_intent_batches WHERE id = ANY($1::text[]::uuid[]) FOR UPDATE", batches); err != nil {
		return Applied{}, fmt.Errorf("intent: apply again: %w", err)
	}
	out, err := applyPostgres(ctx, tx, b, Applied{Refused: map[string]bool{}, Missing: map[string]bool{}}, s, resettleSQL)
	if err != nil {
		return Applied{}, err
	}
	if err := tx.Commit(); err != nil {
		return Applied{}, fmt.Errorf("intent: apply again: %w", err)
	}
	return out, nil
}

// batchesOf returns the distinct batches of complete, sorted.
func batchesOf(complete []Completion) []string {
	batches := make([]string, len(complete))
	for i, c := range complete {
		batches[i] = c.Intent.BatchID
	}
	slices.Sort(batches)
	return slices.Compact(batches)
}

// applyPostgres runs openSQL for b's Open and settleSQL for the rest: each
// part is all or nothing, but two parts are two commits (the runtime's
// journal never mixes them in one batch). The records travel as []byte,
// which the driver sends as text without a copy of its own.
func applyPostgres(ctx context.Context, q Querier, b Batch, out Applied, s *Scratch, settle string) (Applied, error) {
	now := time.Now().UTC()
	if err := openPostgres(ctx, q, b, now, out.Refused, s); err != nil {
		return Applied{}, err
	}
	if len(b.Complete)+len(b.Done) > 0 {
		tasks := make([]string, len(b.Complete))
		for i, c := range b.Complete {
			tasks[i] = c.Intent.TaskID
		}
		done := b.Done
		if done == nil {
			done = []string{}
		}
		records := completionRecords(s.records(), b.Complete)
		err := queryIDs(ctx, q, out.Missing, settle, now, records, feed.LockOrder(tasks), batchesOf(b.Complete), done)
		s.keep(records)
		if err != nil {
			return Applied{}, err
		}
	}
	return out, nil
}

// openPostgres records b's Open as one batch: when some of its steps'
// awaits are settled, their intents are refused (into refused) and the
// others opened again without them.
func openPostgres(ctx context.Context, q Querier, b Batch, now time.Time, refused map[string]bool, s *Scratch) error {
	open := b.Open
	for len(open) > 0 {
		tasks, steps := stepsOf(open)
		records := openRecords(s.records(), open)
		settled, err := settledSteps(ctx, q, now, b.ID, tasks, steps, open[0].Owner, records)
		s.keep(records)
		if err != nil {
			return err
		}
		if len(settled) == 0 {
			return nil
		}
		rest := make([]models.WriteIntent, 0, len(open))
		for _, in := range open {
			if settled[[2]string{in.TaskID, in.StepID}] {
				refused[in.ID] = true
			} else {
				rest = append(rest, in)
			}
		}
		open = rest
	}
	return nil
}

// settledSteps runs openSQL and returns the steps it refused, whose awaits
// are settled.
func settledSteps(ctx context.Context, q Querier, args ...any) (map[[2]string]bool, error) {
	rows, err := q.QueryContext(ctx, openSQL, args...)
	if err != nil {
		return nil, fmt.Errorf("intent: apply: %w", err)
	}
	defer rows.Close()
	var settled map[[2]string]bool
	for rows.Next() {
		var task, step string
		if err := rows.Scan(&task, &step); err != nil {
			return nil, fmt.Errorf("intent: apply: %w", err)
		}
		if settled == nil {
			settled = map[[2]string]bool{}
		}
		settled[[2]string{task, step}] = true
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("intent: apply: %w", err)
	}
	return settled, nil
}

// stepsOf returns the distinct (task, step) pairs of open, as two lists.
func stepsOf(open []models.WriteIntent) (tasks, steps []string) {
	seen := make(map[[2]string]bool, 2)
	for _, in := range open {
		k := [2]string{in.TaskID, in.StepID}
		if !seen[k] {
			seen[k] = true
			tasks, steps = append(tasks, in.TaskID), append(steps, in.StepID)
		}
	}
	return tasks, steps
}

// What a record of openRecords and of completionRecords takes besides its
// variable strings: keys, quotes and separators, and the uuids (36 bytes
// each). Too small an estimate grows the buffer, a copy per growth.
const (
	openRecordSize       = 3*36 + 80
	completionRecordSize = 4*36 + 120
)

// openRecords appends to dst open as a batch's records: a JSON array of
// each intent's id, task, step, name, actor and payload (what a sweep reads
// back).
func openRecords(dst []byte, open []models.WriteIntent) []byte {
	return records(dst, open, func(in models.WriteIntent) int {
		return openRecordSize + len(in.Name) + len(in.Actor) + len(in.Payload)
	},
		func(buf []byte, in models.WriteIntent) []byte {
			buf = appendField(buf, '{', "id", in.ID)
			buf = appendField(buf, ',', "task_id", in.TaskID)
			buf = appendField(buf, ',', "step_id", in.StepID)
			buf = appendField(buf, ',', "name", in.Name)
			buf = appendField(buf, ',', "actor", in.Actor)
			return appendPayload(buf, in.Payload)
		})
}

// completionRecords appends to dst complete as settleSQL's JSON array of
// feed rows.
func completionRecords(dst []byte, complete []Completion) []byte {
	return records(dst, complete, func(c Completion) int {
		return completionRecordSize + len(c.Type) + len(c.Intent.Name) + len(c.Intent.Actor) + len(c.Intent.Payload) + len(c.Payload)
	},
		func(buf []byte, c Completion) []byte {
			buf = appendField(buf, '{', "intent_id", c.Intent.ID)
			buf = appendField(buf, ',', "batch_id", c.Intent.BatchID)
			buf = appendField(buf, ',', "task_id", c.Intent.TaskID)
			buf = appendField(buf, ',', "step_id", c.Intent.StepID)
			buf = appendField(buf, ',', "type", c.Type)
			buf = appendField(buf, ',', "name", c.Intent.Name)
			buf = appendField(buf, ',', "actor", c.Intent.Actor)
			return appendPayload(buf, c.payload())
		})
}

// records appends to dst items as one JSON array, each appended by
// appendRecord, growing dst first to what size estimates (each record's
// length).
func records[T any](dst []byte, items []T, size func(T) int, appendRecord func([]byte, T) []byte) []byte {
	n := 2
	for _, it := range items {
		n += size(it)
	}
	buf := slices.Grow(dst, n)
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

// applyTx is Apply inside a transaction, statement by statement (SQLite,
// and on Postgres a settle that pushes: Pushes).
func applyTx(ctx context.Context, tx *gorm.DB, b Batch, out Applied) error {
	tx = tx.WithContext(ctx)
	now := time.Now().UTC()
	var open []models.WriteIntent
	for _, in := range b.Open {
		settled, err := AwaitSettled(ctx, tx, in.TaskID, in.StepID)
		if err != nil {
			return err
		}
		if settled {
			out.Refused[in.ID] = true
			continue
		}
		open = append(open, in)
	}
	if len(open) > 0 {
		var after int64
		if err := tx.Model(&models.FeedEvent{}).Select("coalesce(max(id), 0)").Scan(&after).Error; err != nil {
			return fmt.Errorf("intent: open: %w", err)
		}
		row := models.WriteIntentBatch{ID: b.ID, Owner: open[0].Owner, CreatedAt: now, FeedAfter: after, Intents: string(openRecords(nil, open))}
		if err := tx.Create(&row).Error; err != nil {
			return fmt.Errorf("intent: open: %w", err)
		}
	}
	for _, c := range b.Complete {
		// On Postgres the batch's row is held until the commit, as settleSQL
		// holds it: a sweep skips it, or went first and recorded the intent.
		var batches []string
		q := tx.Model(&models.WriteIntentBatch{}).Where("id = ?", c.Intent.BatchID)
		if tx.Dialector.Name() == "postgres" {
			q = q.Clauses(clause.Locking{Strength: "KEY SHARE"})
		}
		if err := q.Pluck("id", &batches).Error; err != nil {
			return fmt.Errorf("intent: complete: %w", err)
		}
		var tasks int64
		if err := tx.Model(&models.Task{}).Where("id = ?", c.Intent.TaskID).Count(&tasks).Error; err != nil {
			return fmt.Errorf("intent: complete: %w", err)
		}
		if len(batches) == 0 || tasks == 0 {
			out.Missing[c.Intent.ID] = true
			continue
		}
		if err := feed.Insert(ctx, tx, false, feedRow(c.Intent, c.Type, c.payload(), now)); err != nil {
			return fmt.Errorf("intent: complete: %w", err)
		}
	}
	if len(b.Done) > 0 {
		if err := tx.Where("id IN ?", b.Done).Delete(&models.WriteIntentBatch{}).Error; err != nil {
			return fmt.Errorf("intent: done: %w", err)
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

// feedRow is the feed row an intent becomes, which names it.
func feedRow(in models.WriteIntent, typ string, payload models.JSON, at time.Time) models.FeedEvent {
	return models.FeedEvent{TaskID: in.TaskID, StepID: &in.StepID, Type: typ, Name: in.Name, Payload: payload,
		Actor: in.Actor, IntentID: &in.ID, CreatedAt: at}
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
