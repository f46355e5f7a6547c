package runtime

import (
	"context"
	"database/sql"
	"fmt"
	"log/slog"
	"sync"

	"github.com/appruntime/appruntime/internal/apperr"
	"github.com/appruntime/appruntime/internal/config"
	"github.com/appruntime/appruntime/internal/intent"
	"github.com/appruntime/appruntime/internal/store"
	"github.com/appruntime/appruntime/models"
)

// Journal group-commits the write intents and feed rows of the verbs
// (internal/intent): each call still waits until its own intent or feed row
// is committed, but what arrives together shares one statement and one
// commit, so a busy surface costs the platform database a fraction of a
// round trip per write.
//
// Two writers run side by side. One opens intents, with the database's
// usual durable commit: an intent must be on disk before the data source may
// commit. The other completes and drops them on a connection of its own
// whose commits do not wait for the disk flush (synchronous_commit off on
// Postgres): what it records is visible at once, and should the platform
// database crash before flushing it, the intent it removed is still there
// and the sweep records the write as outcome unknown, so it costs /write
// no second disk flush.
type Journal struct {
	st      *store.Store
	log     *slog.Logger
	opens   chan journalItem
	settles chan journalItem
	wg      sync.WaitGroup

	mu     sync.RWMutex // guards closed against a send on a closed queue
	closed bool

	ownerMu sync.Mutex
	owner   *intent.Owner // claimed on first use

	conn *sql.Conn // the settling writer's connection (Postgres); only it uses it
}

// journalItem is one of: an intent to open, an intent to drop, an intent to
// complete.
type journalItem struct {
	open     *models.WriteIntent
	drop     string
	complete *intent.Completion
	done     chan journalResult
}

type journalResult struct {
	applied bool // opened, or completed
	err     error
}

// errShuttingDown answers what arrives once the journal is closed.
var errShuttingDown = apperr.New(apperr.Unavailable, "the server is shutting down; retry")

// journalBatch is how many items one statement takes at most.
const journalBatch = 256

// NewJournal starts the writers on st; Close stops them after the queued items.
func NewJournal(st *store.Store, log *slog.Logger) *Journal {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	j := &Journal{st: st, log: log, opens: make(chan journalItem, journalBatch), settles: make(chan journalItem, journalBatch)}
	j.wg.Add(2)
	go j.work(j.opens, j.applyDurably)
	go j.work(j.settles, j.applyFast)
	return j
}

// Open records in, a write intent, for this process's owner. It reports
// false when the step's await is no longer pending: nothing was recorded and
// the write must not happen.
func (j *Journal) Open(ctx context.Context, in models.WriteIntent) (bool, error) {
	owner, err := j.ownerID(ctx)
	if err != nil {
		return false, err
	}
	in.Owner = owner
	return j.submit(ctx, j.opens, journalItem{open: &in})
}

// Drop removes the intent id of a write that did not commit.
func (j *Journal) Drop(ctx context.Context, id string) error {
	_, err := j.submit(ctx, j.settles, journalItem{drop: id})
	return err
}

// Complete turns an intent into its feed row. It reports false when the
// intent was gone (a sweep had recorded it as unknown meanwhile).
func (j *Journal) Complete(ctx context.Context, c intent.Completion) (bool, error) {
	return j.submit(ctx, j.settles, journalItem{complete: &c})
}

func (j *Journal) submit(ctx context.Context, queue chan journalItem, it journalItem) (bool, error) {
	it.done = make(chan journalResult, 1)
	j.mu.RLock()
	if j.closed {
		j.mu.RUnlock()
		return false, errShuttingDown
	}
	select {
	case queue <- it:
	case <-ctx.Done():
		j.mu.RUnlock()
		return false, ctx.Err()
	}
	j.mu.RUnlock()
	r := <-it.done
	return r.applied, r.err
}

// ownerID returns the id of this process's owner, claiming it on first use.
func (j *Journal) ownerID(ctx context.Context) (string, error) {
	j.ownerMu.Lock()
	defer j.ownerMu.Unlock()
	j.mu.RLock()
	closed := j.closed
	j.mu.RUnlock()
	if closed {
		return "", errShuttingDown
	}
	if j.owner == nil {
		o, err := intent.Claim(ctx, j.st, j.log)
		if err != nil {
			return "", fmt.Errorf("runtime: %w", err)
		}
		j.owner = o
	}
	return j.owner.ID(), nil
}

// Close stops the writers once every queued item is written, then releases
// the owner.
func (j *Journal) Close() {
	j.mu.Lock()
	if !j.closed {
		j.closed = true
		close(j.opens)
		close(j.settles)
	}
	j.mu.Unlock()
	j.wg.Wait()
	if j.conn != nil {
		store.DiscardConn(j.conn) // its setting must not reach the pool
		j.conn = nil
	}
	j.ownerMu.Lock()
	defer j.ownerMu.Unlock()
	if j.owner != nil {
		j.owner.Close()
		j.owner = nil
	}
}

func (j *Journal) work(queue chan journalItem, apply func(intent.Batch) (intent.Applied, error)) {
	defer j.wg.Done()
	for first := range queue {
		batch := []journalItem{first}
	drain:
		for len(batch) < journalBatch {
			select {
			case it, ok := <-queue:
				if !ok {
					break drain
				}
				batch = append(batch, it)
			default:
				break drain
			}
		}
		j.flush(batch, apply)
	}
}

// flush applies a batch in one statement. Should it fail, each item is
// retried on its own so that one bad item (a task deleted meanwhile) fails
// only its own call.
func (j *Journal) flush(batch []journalItem, apply func(intent.Batch) (intent.Applied, error)) {
	var b intent.Batch
	for _, it := range batch {
		add(&b, it)
	}
	applied, err := apply(b)
	if err == nil || len(batch) == 1 {
		for _, it := range batch {
			it.done <- result(it, applied, err)
		}
		return
	}
	for _, it := range batch {
		var one intent.Batch
		add(&one, it)
		applied, err := apply(one)
		it.done <- result(it, applied, err)
	}
}

// applyDurably applies b through the pool, with durable commits.
func (j *Journal) applyDurably(b intent.Batch) (intent.Applied, error) {
	return intent.Apply(context.Background(), j.st.DB, b)
}

// applyFast applies b on the settling writer's connection, whose commits do
// not wait for the disk (Postgres); elsewhere as applyDurably does.
func (j *Journal) applyFast(b intent.Batch) (intent.Applied, error) {
	if j.st.Dialect != config.Postgres || j.st.SQL() == nil {
		return j.applyDurably(b)
	}
	ctx := context.Background()
	if j.conn == nil {
		conn, err := j.st.SQL().Conn(ctx)
		if err != nil {
			return intent.Applied{}, fmt.Errorf("runtime: journal connection: %w", err)
		}
		if _, err := conn.ExecContext(ctx, "SET synchronous_commit = off"); err != nil {
			store.DiscardConn(conn)
			return intent.Applied{}, fmt.Errorf("runtime: journal connection: %w", err)
		}
		j.conn = conn
	}
	applied, err := intent.ApplyOn(ctx, j.conn, b)
	if err != nil && j.conn.PingContext(ctx) != nil {
		store.DiscardConn(j.conn) // broken: the next batch takes a new one
		j.conn = nil
	}
	return applied, err
}

func add(b *intent.Batch, it journalItem) {
	switch {
	case it.open != nil:
		b.Open = append(b.Open, *it.open)
	case it.complete != nil:
		b.Complete = append(b.Complete, *it.complete)
	default:
		b.Drop = append(b.Drop, it.drop)
	}
}

func result(it journalItem, applied intent.Applied, err error) journalResult {
	if err != nil {
		return journalResult{err: fmt.Errorf("runtime: record write: %w", err)}
	}
	switch {
	case it.open != nil:
		return journalResult{applied: !applied.Refused[it.open.ID]}
	case it.complete != nil:
		return journalResult{applied: !applied.Missing[it.complete.ID]}
	}
	return journalResult{applied: true}
}
