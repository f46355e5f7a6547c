package intent

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/appruntime/appruntime/internal/apperr"
	"github.com/appruntime/appruntime/internal/config"
	"github.com/appruntime/appruntime/internal/store"
	"github.com/appruntime/appruntime/models"
)

// Journal group-commits the write intents and feed rows of the runtime's
// verbs: what arrives together shares one statement and one commit, so a busy surface costs the platform database a fraction of a
// round trip per write. Opening an intent is always waited for; a /write's
// completion is queued (CompleteLater) and an action waits for the queue
// (Flush) before it records its own feed row. Intents opened together are
// one batch row; the journal counts each batch's intents not yet recorded
// or dropped, and deletes the row with the next statement once none is left.
//
// Writers run side by side. One or more (openWriters) open intents, with the database's
// usual durable commit: an intent must be on disk before the data source may
// commit. Opens have no goroutine of their own: the caller that starts a
// batch writes it on an idle writer, and the callers arriving meanwhile join
// the next batch, which the first of them writes once a writer is free (a
// group commit that costs the caller who leads it no hand-off). One other
// writer, a goroutine, completes and drops intents on a connection of its own
// whose commits do not wait for the disk flush (synchronous_commit off on
// Postgres): what it records is visible at once, and should the platform
// database crash before flushing it, the feed row is lost but the batch row
// it would have let go is still there, and the sweep records the write as
// outcome unknown, so it costs /write no second disk flush. It lets the completions nobody waits for gather for
// a few milliseconds (settleLinger), so a busy api settles them in a few
// large statements.
type Journal struct {
	st      *store.Store
	log     *slog.Logger
	settles chan journalItem
	wg      sync.WaitGroup

	mu     sync.RWMutex // guards closed against a send on a closed queue
	closed bool

	openMu  sync.Mutex
	waiting []*openBatch // batches waiting for a writer, oldest first
	idle    []*writer    // open writers not writing a batch
	opening sync.WaitGroup

	ownerMu sync.Mutex
	owner   *Owner // claimed on first use

	batchMu sync.Mutex
	left    map[string]*openedBatch // by batch id
	done    []string                // batches none is left of, to delete with the next statement
	// lastPrune is when forgetStale last ran (the settle writer's only).
	lastPrune time.Time
}

// openedBatch counts the intents of a batch neither recorded nor dropped yet.
type openedBatch struct {
	left   int
	opened time.Time
}

// openBatch is intents opened together: its first caller writes it, the
// others wait for done.
type openBatch struct {
	intents []models.WriteIntent
	turn    chan *writer // the writer the first caller is to write it on
	done    chan struct{}
	opened  []journalResult // by intent, once done
}

// journalItem is one of: an intent to complete, an intent to drop (its
// write did not commit), an intent an action recorded itself (Recorded), a
// barrier (Flush). done is nil for what nobody waits for.
type journalItem struct {
	complete *Completion
	drop     *models.WriteIntent
	recorded *models.WriteIntent
	barrier  bool
	done     chan journalResult
}

// batchOfItem is the batch an item settles an intent of, or "".
func (it journalItem) batchOfItem() string {
	switch {
	case it.complete != nil:
		return it.complete.Intent.BatchID
	case it.drop != nil:
		return it.drop.BatchID
	case it.recorded != nil:
		return it.recorded.BatchID
	}
	return ""
}

type journalResult struct {
	applied bool // opened, or completed
	err     error
}

// errShuttingDown answers what arrives once the journal is closed.
var errShuttingDown = apperr.New(apperr.Unavailable, "the server is shutting down; retry")

// openWriters is how many writers open intents side by side. Opens insert
// independent rows (no lock is taken), so their batches may commit in any
// order; completions keep one writer, as feed rows keep their order. Each
// batch is a statement and a commit, which cost Postgres about as much as
// the rows they carry: with two writers a busy api's batches held about 8
// intents and Postgres spent 26 µs of CPU per intent opened; with one they
// hold twice as many, at 19 µs, on the same two cores the api needs (docs/performance.md#where-a-writes-time-goes). A second writer lets an open skip the rest
// of a commit in flight, which pays only where a commit takes milliseconds
// of disk wait rather than CPU.
const openWriters = 1

// journalBatch is how many items one statement takes at most.
const journalBatch = 256

// openBatchCap is the room a new batch of opens starts with: more than a
// busy api gathers in one commit, so its callers join without the slice
// growing (each growth copies every intent so far).
const openBatchCap = 32

// NewJournal starts the writers on st; Close stops them after the queued items.
func NewJournal(st *store.Store, log *slog.Logger) *Journal {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	j := &Journal{st: st, log: log, settles: make(chan journalItem, journalBatch), left: map[string]*openedBatch{}}
	for range openWriters {
		j.idle = append(j.idle, &writer{st: st, setup: openSetup})
	}
	j.wg.Add(1)
	go j.work(j.settles, &writer{st: st, setup: settleSetup, reconnectFor: settleReconnectFor})
	return j
}

// Open records in, a write intent, for this process's owner, and returns it
// as recorded (its Owner and BatchID set). It reports false when the step's
// await is no longer pending: nothing was recorded and the write must not
// happen.
func (j *Journal) Open(ctx context.Context, in models.WriteIntent) (models.WriteIntent, bool, error) {
	owner, err := j.ownerID(ctx)
	if err != nil {
		return in, false, err
	}
	in.Owner = owner
	b, i, w, err := j.joinOpen(in)
	if err != nil {
		return in, false, err
	}
	if i > 0 {
		<-b.done
	} else {
		if w == nil {
			w = <-b.turn
		}
		j.writeOpens(b, w)
	}
	r := b.opened[i]
	return b.intents[i], r.applied, r.err
}

// joinOpen adds in to the batch being gathered and returns it with in's
// index there. The first caller of a batch (i == 0) writes it: at once on w
// when a writer is idle, else on the writer that b.turn hands it.
func (j *Journal) joinOpen(in models.WriteIntent) (b *openBatch, i int, w *writer, err error) {
	j.openMu.Lock()
	defer j.openMu.Unlock()
	if j.isClosed() {
		return nil, 0, nil, errShuttingDown
	}
	if n := len(j.waiting); n > 0 && len(j.waiting[n-1].intents) < journalBatch {
		b = j.waiting[n-1]
		b.intents = append(b.intents, in)
		return b, len(b.intents) - 1, nil, nil
	}
	b = &openBatch{intents: make([]models.WriteIntent, 1, openBatchCap), done: make(chan struct{})}
	b.intents[0] = in
	j.opening.Add(1)
	if n := len(j.idle); n > 0 {
		w, j.idle = j.idle[n-1], j.idle[:n-1]
		return b, 0, w, nil
	}
	b.turn = make(chan *writer, 1)
	j.waiting = append(j.waiting, b)
	return b, 0, nil, nil
}

// writeOpens writes b on w as one batch row, then hands w to the oldest
// waiting batch, or back to the idle ones. Should the batch fail, each of
// its intents is opened as a batch of its own, so that one bad intent fails
// only its own call.
func (j *Journal) writeOpens(b *openBatch, w *writer) {
	b.opened = make([]journalResult, len(b.intents))
	if !j.openBatch(w, b.intents, b.opened) && len(b.intents) > 1 {
		for i := range b.intents {
			j.openBatch(w, b.intents[i:i+1], b.opened[i:i+1])
		}
	}
	close(b.done)
	j.openMu.Lock()
	if len(j.waiting) > 0 {
		next := j.waiting[0]
		j.waiting = j.waiting[1:]
		next.turn <- w
	} else {
		j.idle = append(j.idle, w)
	}
	j.openMu.Unlock()
	j.opening.Done()
}

// openBatch records intents as one batch on w, setting each one's BatchID
// and result, and counts the batch's intents opened before anyone can
// settle one. It reports whether the statement succeeded.
func (j *Journal) openBatch(w *writer, intents []models.WriteIntent, results []journalResult) bool {
	id := models.NewID()
	for i := range intents {
		intents[i].BatchID = id
	}
	applied, err := w.apply(Batch{ID: id, Open: intents})
	opened := 0
	for i, in := range intents {
		if err != nil {
			results[i] = journalResult{err: fmt.Errorf("intent: record write: %w", err)}
			continue
		}
		results[i] = journalResult{applied: !applied.Refused[in.ID]}
		if results[i].applied {
			opened++
		}
	}
	if opened > 0 {
		j.batchMu.Lock()
		j.left[id] = &openedBatch{left: opened, opened: time.Now()}
		j.batchMu.Unlock()
	}
	return err == nil
}

// settled counts an intent of batch as recorded or dropped; the batch's
// row is deleted with the next statement once none of its intents is left.
func (j *Journal) settled(batch string) {
	if batch == "" {
		return
	}
	j.batchMu.Lock()
	defer j.batchMu.Unlock()
	b, ok := j.left[batch]
	if !ok {
		return
	}
	if b.left <= 1 {
		delete(j.left, batch)
		j.done = append(j.done, batch)
		return
	}
	b.left--
}

// maybeForgetStale runs forgetStale once a minute at most (the settle
// writer's goroutine only).
func (j *Journal) maybeForgetStale() {
	if now := time.Now(); now.Sub(j.lastPrune) > time.Minute {
		j.lastPrune = now
		j.forgetStale(now)
	}
}

// forgetStale stops counting batches older than StaleAfter: an
// intent whose completion failed (the platform database was down) keeps
// its batch for the sweep, which takes it at that age.
func (j *Journal) forgetStale(now time.Time) {
	j.batchMu.Lock()
	defer j.batchMu.Unlock()
	for id, b := range j.left {
		if now.Sub(b.opened) > StaleAfter {
			delete(j.left, id)
		}
	}
}

// takeDone returns the batches to delete, which the caller must write or
// hand back (giveBackDone).
func (j *Journal) takeDone() []string {
	j.batchMu.Lock()
	defer j.batchMu.Unlock()
	done := j.done
	j.done = nil
	return done
}

func (j *Journal) giveBackDone(done []string) {
	if len(done) == 0 {
		return
	}
	j.batchMu.Lock()
	j.done = append(j.done, done...)
	j.batchMu.Unlock()
}

// Drop settles the intent of a write that did not commit: no feed row
// records it.
func (j *Journal) Drop(ctx context.Context, in models.WriteIntent) error {
	_, err := j.submit(ctx, j.settles, journalItem{drop: &in})
	return err
}

// Recorded settles an intent whose feed row its caller committed itself
// (an action's, in the transaction that releases its await). Should the
// journal be closing, the intent's batch row stays until a sweep finds
// that feed row: nothing is recorded twice.
func (j *Journal) Recorded(ctx context.Context, in models.WriteIntent) {
	if err := j.enqueue(ctx, j.settles, journalItem{recorded: &in}); err != nil {
		j.log.Warn("journal: an action's intent stays for the sweep", "error", err.Error())
	}
}

// Complete turns an intent into its feed row. It reports false when the
// intent was gone (a sweep had recorded it as unknown meanwhile).
func (j *Journal) Complete(ctx context.Context, c Completion) (bool, error) {
	return j.submit(ctx, j.settles, journalItem{complete: &c})
}

// CompleteLater queues the completion of an intent and returns without
// waiting for its commit (a full queue makes it wait for room). What goes
// wrong is logged: the intent then stays for the sweep.
func (j *Journal) CompleteLater(ctx context.Context, c Completion) error {
	return j.enqueue(ctx, j.settles, journalItem{complete: &c})
}

// Flush returns once every completion queued before it is committed, so a
// feed row written next (an action's) comes after this process's earlier
// writes in the feed.
func (j *Journal) Flush(ctx context.Context) error {
	_, err := j.submit(ctx, j.settles, journalItem{barrier: true})
	return err
}

// submit queues it and waits for its result.
func (j *Journal) submit(ctx context.Context, queue chan journalItem, it journalItem) (bool, error) {
	it.done = make(chan journalResult, 1)
	if err := j.enqueue(ctx, queue, it); err != nil {
		return false, err
	}
	r := <-it.done
	return r.applied, r.err
}

// enqueue queues it, unless the journal is closed or ctx ends first.
func (j *Journal) enqueue(ctx context.Context, queue chan journalItem, it journalItem) error {
	j.mu.RLock()
	defer j.mu.RUnlock()
	if j.closed {
		return errShuttingDown
	}
	select {
	case queue <- it:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (j *Journal) isClosed() bool {
	j.mu.RLock()
	defer j.mu.RUnlock()
	return j.closed
}

// ownerID returns the id of this process's owner, claiming it on first use.
func (j *Journal) ownerID(ctx context.Context) (string, error) {
	j.ownerMu.Lock()
	defer j.ownerMu.Unlock()
	if j.isClosed() {
		return "", errShuttingDown
	}
	if j.owner == nil {
		o, err := Claim(ctx, j.st, j.log)
		if err != nil {
			return "", fmt.Errorf("intent: %w", err)
		}
		j.owner = o
	}
	return j.owner.ID(), nil
}

// Close stops the writers once every queued item is written, then releases
// the owner.
func (j *Journal) Close() {
	j.openMu.Lock() // no batch starts after closed is set
	j.mu.Lock()
	if !j.closed {
		j.closed = true
		close(j.settles)
	}
	j.mu.Unlock()
	j.openMu.Unlock()
	j.opening.Wait()
	j.wg.Wait()
	for _, w := range j.idle {
		w.close()
	}
	j.ownerMu.Lock()
	defer j.ownerMu.Unlock()
	if j.owner != nil {
		j.owner.Close()
		j.owner = nil
	}
}

// settleLinger is how long the settle writer lets queued completions that
// nobody waits for (a /write's, CompleteLater) gather before it writes
// them, when more than one was queued already: a statement and a commit cost the platform database about as much
// as the rows they carry, so a busy api writes a few large batches rather
// than one small batch per round trip. The /write was answered already;
// its feed row comes this much later. Anything a caller waits for (a drop,
// a synchronous completion, Flush) ends the wait at once.
const settleLinger = 5 * time.Millisecond

func (j *Journal) work(queue chan journalItem, w *writer) {
	defer j.wg.Done()
	defer w.close()
	linger := time.NewTimer(settleLinger)
	linger.Stop()
	for first := range queue {
		batch := []journalItem{first}
		waited := first.done != nil
		open := true
	drain:
		for open && len(batch) < journalBatch {
			select {
			case it, ok := <-queue:
				if !ok {
					open = false
					break drain
				}
				batch = append(batch, it)
				waited = waited || it.done != nil
			default:
				break drain
			}
		}
		// Only a busy api lingers: a lone completion (the batch found
		// nothing else queued) is written at once, so a quiet api's feed
		// row follows its /write's answer as closely as before.
		if !waited && open && len(batch) > 1 && len(batch) < journalBatch {
			linger.Reset(settleLinger)
		gather:
			for len(batch) < journalBatch {
				select {
				case it, ok := <-queue:
					if !ok {
						break gather
					}
					batch = append(batch, it)
					if it.done != nil {
						break gather
					}
				case <-linger.C:
					break gather
				}
			}
			linger.Stop()
		}
		j.flushSettles(batch, w)
		if len(queue) == 0 {
			j.flushDone(w) // a quiet api deletes its finished batches at once
		}
	}
	j.flushDone(w)
}

// flushSettles applies a batch of settle items on w, with the batches
// done so far, then counts what it settled.
func (j *Journal) flushSettles(batch []journalItem, w *writer) {
	j.maybeForgetStale()
	done := j.takeDone()
	b := batchOf(batch)
	b.Done = done
	results := make([]journalResult, len(batch))
	if len(b.Complete) == 0 && len(done) == 0 {
		for i, it := range batch {
			results[i] = result(it, Applied{}, nil)
		}
		j.afterSettle(batch, results)
		return
	}
	applied, err := w.apply(b)
	if err != nil && !errors.Is(err, errCut) && (len(b.Complete) > 1 || len(done) > 0) {
		// Each completion on its own, so that one bad item (a record the
		// database refuses) fails only its own call; the finished batches
		// wait for the next statement.
		j.giveBackDone(done)
		for i, it := range batch {
			if it.complete == nil {
				results[i] = result(it, Applied{}, nil)
				continue
			}
			applied, err := w.apply(Batch{Complete: []Completion{*it.complete}})
			results[i] = result(it, applied, err)
		}
	} else {
		if err != nil {
			j.giveBackDone(done)
		}
		for i, it := range batch {
			results[i] = result(it, applied, err)
		}
	}
	j.afterSettle(batch, results)
}

// afterSettle counts the intents batch settled and hands each item its
// result. A completion that failed settles nothing: its intent stays, and
// the sweep records its write as unknown.
func (j *Journal) afterSettle(batch []journalItem, results []journalResult) {
	for i, it := range batch {
		if results[i].err == nil {
			j.settled(it.batchOfItem())
		}
		j.deliver(it, results[i])
	}
}

// flushDone deletes the batches done so far, when there are any.
func (j *Journal) flushDone(w *writer) {
	j.maybeForgetStale()
	done := j.takeDone()
	if len(done) == 0 {
		return
	}
	if _, err := w.apply(Batch{Done: done}); err != nil {
		j.giveBackDone(done)
		j.log.Warn("journal: deleting finished intent batches failed; the next statement retries", "error", err.Error())
	}
}

// deliver hands r to whoever waits for it, or logs its failure.
func (j *Journal) deliver(it journalItem, r journalResult) {
	if it.done != nil {
		it.done <- r
		return
	}
	if r.err != nil {
		j.log.Warn("journal: a queued completion failed; the sweep will record its write as outcome unknown", "error", r.err.Error())
	}
}

// settleSetup are the settings of the settle writer's connection: commits
// that do not wait for the disk flush (see Journal), and no sequential
// scans. The batches' table churns (a row every few writes, deleted
// milliseconds later), so between autovacuum runs it holds thousands of
// dead rows, while the plan Postgres caches for the settle statement may
// have been made when it looked empty: a sequential scan, which would then
// read every dead row on each settle. A settle finds each of its rows by
// key whatever the table's size, so on this connection, which runs nothing
// else, the index is the plan.
var settleSetup = []string{"SET synchronous_commit = off", "SET enable_seqscan = off", genericPlans, noJIT}

// openSetup are the settings of an open writer's connection (genericPlans,
// noJIT).
var openSetup = []string{genericPlans, noJIT}

// noJIT keeps a writer's statements from being compiled by the server's JIT.
// Postgres compiles a plan whose estimated cost crosses jit_above_cost
// (100,000 by default) each time it runs it, which costs about 100 ms of
// CPU, for statements that run in well under a millisecond. On the settle
// writer's connection, which prices sequential scans out (enable_seqscan
// off adds 10^10 to their cost), a plan that still needs one crosses it on
// every call: measured on the open statement, whose sequence read is a
// scan, 135 ms a call instead of 0.1 ms.
const noJIT = "SET jit = off"

// genericPlans keeps a writer's one prepared statement on its generic plan.
// Left to choose, Postgres planned the settle statement again on nine
// calls of ten (a custom plan, whose estimate for its JSON parameter's rows
// is no better than the generic one's): about 0.38 ms of planning per
// settle, more than its fifty rows cost to write. A writer runs nothing but
// its statement, whose every row is found by key, so the generic plan is
// always the right one.
const genericPlans = "SET plan_cache_mode = force_generic_plan"

// writer is one of the journal's writers. On Postgres it keeps a
// connection of its own, set up once with setup (session settings), so a
// batch costs one round trip and no pool checkout; elsewhere it goes
// through the store.
type writer struct {
	st    *store.Store
	setup []string
	conn  *sql.Conn
	// used is when conn last ran a statement.
	used time.Time
	// reconnectFor is how long apply keeps trying to connect when the
	// database cannot be reached (a restart): the settle writer's, whose
	// completions would otherwise be left for the sweep to record as
	// unknown although their writes committed. The open writers fail at
	// once: a request waits on them.
	reconnectFor time.Duration
	// scratch is where the batches' records are built (Postgres).
	scratch Scratch
}

// idleCheck is how long the writer's connection may sit unused before
// apply pings it first (database/sql's rule for its pooled connections):
// a connection the server closed meanwhile (a restart) is replaced before
// the batch is sent on it, when retrying cannot write anything twice.
const idleCheck = time.Second

// settleReconnectFor bounds the settle writer's attempts to reconnect.
const settleReconnectFor = 30 * time.Second

func (w *writer) apply(b Batch) (Applied, error) {
	ctx := context.Background()
	if w.st.Dialect != config.Postgres || w.st.SQL() == nil || Pushes(b) {
		return Apply(ctx, w.st.DB, b)
	}
	deadline := time.Now().Add(w.reconnectFor)
	if err := w.connect(ctx, deadline); err != nil {
		return Applied{}, err
	}
	applied, err := ApplyOn(ctx, w.conn, b, &w.scratch)
	for err != nil {
		w.used = time.Now()
		if w.conn.PingContext(ctx) == nil {
			return Applied{}, err // the database refused the batch
		}
		w.close() // broken: the next try takes a new one
		// The connection broke with the batch in flight (a restart, a
		// terminated backend): it may have committed. The settle writer
		// applies it again, which writes nothing twice, until it lands
		// (docs/architecture.md#the-write-guarantee); an open is not
		// retried, its caller is answered.
		if len(b.Open) > 0 || w.reconnectFor == 0 || time.Now().After(deadline) {
			return Applied{}, fmt.Errorf("%w: %w", errCut, err)
		}
		time.Sleep(retryPause)
		if err := w.connect(ctx, deadline); err != nil {
			return Applied{}, fmt.Errorf("%w: %w", errCut, err)
		}
		applied, err = ReapplyOn(ctx, w.conn, b, &w.scratch)
	}
	w.used = time.Now()
	return applied, nil
}

// retryPause is how long the settle writer waits before it applies again
// a batch whose connection broke.
const retryPause = 50 * time.Millisecond

// errCut marks the failure of a batch whose connection broke (and kept
// breaking): trying its items one by one would fail alike.
var errCut = errors.New("the platform database connection broke")

// connect makes sure the writer holds a connection that answers, trying
// until deadline while the database cannot be reached. Nothing of a batch
// has been sent when it fails.
func (w *writer) connect(ctx context.Context, deadline time.Time) error {
	if w.conn != nil && time.Since(w.used) > idleCheck && w.conn.PingContext(ctx) != nil {
		w.close()
	}
	for wait := 50 * time.Millisecond; w.conn == nil; wait = min(2*wait, time.Second) {
		err := w.open(ctx)
		if err == nil {
			break
		}
		if !apperr.Disconnected(err) || time.Now().Add(wait).After(deadline) {
			return err
		}
		time.Sleep(wait)
	}
	return nil
}

// open takes a connection from the store's pool and applies the writer's
// settings to it.
func (w *writer) open(ctx context.Context) error {
	// The pool pings a connection idle for over a second before it
	// hands it out (pgx's ResetSession).
	conn, err := w.st.SQL().Conn(ctx)
	if err != nil {
		return fmt.Errorf("intent: journal connection: %w", err)
	}
	for _, setting := range w.setup {
		if _, err := conn.ExecContext(ctx, setting); err != nil {
			store.DiscardConn(conn)
			return fmt.Errorf("intent: journal connection: %w", err)
		}
	}
	w.conn, w.used = conn, time.Now()
	return nil
}

// close lets the connection go, never back to the pool, where its setting
// would reach other users.
func (w *writer) close() {
	if w.conn != nil {
		store.DiscardConn(w.conn)
		w.conn = nil
	}
}

// batchOf is the Batch of items: their completions, allocated once
// (a drop, a recorded intent and a barrier need no statement).
func batchOf(items []journalItem) Batch {
	n := 0
	for _, it := range items {
		if it.complete != nil {
			n++
		}
	}
	b := Batch{Complete: make([]Completion, 0, n)}
	for _, it := range items {
		if it.complete != nil {
			b.Complete = append(b.Complete, *it.complete)
		}
	}
	return b
}

func result(it journalItem, applied Applied, err error) journalResult {
	if err != nil && it.complete != nil {
		return journalResult{err: fmt.Errorf("intent: record write: %w", err)}
	}
	if it.complete != nil {
		return journalResult{applied: !applied.Missing[it.complete.Intent.ID]}
	}
	return journalResult{applied: true}
}
