package outbox

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/hibiken/asynq"
	"github.com/redis/go-redis/v9"
	"gorm.io/gorm"
	"gorm.io/gorm/clause"

	"github.com/appruntime/appruntime/internal/config"
	"github.com/appruntime/appruntime/internal/requestid"
	"github.com/appruntime/appruntime/internal/store"
	"github.com/appruntime/appruntime/internal/tracing"
	"github.com/appruntime/appruntime/jobs"
	"github.com/appruntime/appruntime/models"
)

// Relay pacing.
const (
	// BatchSize is how many rows one RunOnce moves at most.
	BatchSize = 100
	// DefaultPollInterval is how often an idle relay looks for rows nobody
	// nudged it about.
	DefaultPollInterval = 200 * time.Millisecond
	// errorBackoff is how long Run waits after a failed pass (database or Redis down).
	errorBackoff = time.Second
	// strayCheckInterval is how often Run logs rows of kinds it cannot relay.
	strayCheckInterval = time.Minute
)

// wakeChannel is the pub/sub channel, under the deployment's key prefix,
// that Nudge publishes on.
const wakeChannel = "outbox:wake"

// jobFor maps an outbox kind to the job the relay enqueues for its row. A
// kind missing here is never relayed (its rows stay unsent and are logged).
var jobFor = map[string]func(outboxID string) jobs.Args{
	KindResumeEvent: func(id string) jobs.Args { return jobs.ResumeEvent{OutboxID: id} },
	KindSummary:     func(id string) jobs.Args { return jobs.Summary{OutboxID: id} },
	KindAwaitExpiry: func(id string) jobs.Args { return jobs.AwaitExpiry{OutboxID: id} },
	KindProducer:    func(id string) jobs.Args { return jobs.RunProducer{OutboxID: id} },
	KindOCR:         func(id string) jobs.Args { return jobs.OCRFile{OutboxID: id} },
}

func relayedKinds() []string {
	kinds := make([]string, 0, len(jobFor))
	for k := range jobFor {
		kinds = append(kinds, k)
	}
	return kinds
}

// Relay moves committed outbox rows to the events queue, oldest first. The
// row id is the asynq task id and finished tasks are retained for
// jobs.Retention, so a row enqueued by a relay that died before marking it
// sent is refused as a duplicate the next time and simply marked. Several
// relays may run at once against Postgres (rows are claimed with FOR UPDATE
// SKIP LOCKED); against SQLite one process runs it.
type Relay struct {
	// PollInterval is how long an idle relay waits for a Nudge before it
	// looks again anyway (DefaultPollInterval). Set it before Run.
	PollInterval time.Duration
	// ScriptQueue is where producers run (the script queue, with retries
	// and its deadline); empty puts them on the events queue. Set it
	// before Run.
	ScriptQueue string
	// ExtractQueue is where uploads' OCR passes run (the extract queue,
	// with retries and its deadline); empty puts them on the events
	// queue. Set it before Run.
	ExtractQueue string

	store  *store.Store
	client *asynq.Client
	redis  redis.UniversalClient
	prefix string
	queue  string
	log    *slog.Logger
}

// NewRelay returns a relay enqueueing on queue (the events queue) through
// rdb; keyPrefix names the wake channel Nudge publishes on.
func NewRelay(st *store.Store, rdb redis.UniversalClient, keyPrefix, queue string, log *slog.Logger) *Relay {
	return &Relay{
		PollInterval: DefaultPollInterval,
		store:        st,
		client:       asynq.NewClientFromRedisClient(rdb),
		redis:        rdb,
		prefix:       keyPrefix,
		queue:        queue,
		log:          log,
	}
}

// RunOnce moves at most BatchSize unsent rows to the queue and returns how
// many it marked sent. A row whose enqueue fails stays unsent for the next
// pass; the error is returned after the rows already enqueued are marked.
func (r *Relay) RunOnce(ctx context.Context) (int, error) {
	var moved int
	var enqueueErr error
	err := r.store.Tx(ctx, func(tx *gorm.DB) error {
		q := tx.Where("sent_at IS NULL AND kind IN ?", relayedKinds()).Order("created_at, id").Limit(BatchSize)
		if r.store.Dialect == config.Postgres {
			q = q.Clauses(clause.Locking{Strength: "UPDATE", Options: "SKIP LOCKED"})
		}
		var rows []models.Outbox
		if err := q.Find(&rows).Error; err != nil {
			return fmt.Errorf("outbox: select unsent: %w", err)
		}
		sent := make([]string, 0, len(rows))
		for _, row := range rows {
			if err := r.enqueue(ctx, row); err != nil {
				enqueueErr = err
				break
			}
			sent = append(sent, row.ID)
		}
		if len(sent) == 0 {
			return nil
		}
		res := tx.Model(&models.Outbox{}).Where("id IN ?", sent).Update("sent_at", time.Now().UTC())
		if res.Error != nil {
			return fmt.Errorf("outbox: mark sent: %w", res.Error)
		}
		moved = len(sent)
		return nil
	})
	if err != nil {
		return 0, err
	}
	return moved, enqueueErr
}

// enqueue puts row's job on the queue; a task of the same id already there
// (or retained after it finished) means an earlier pass enqueued it.
func (r *Relay) enqueue(ctx context.Context, row models.Outbox) error {
	task, opts, err := r.job(row)
	if err != nil {
		return err
	}
	_, err = r.client.EnqueueContext(ctx, task, opts...)
	if err != nil && !errors.Is(err, asynq.ErrTaskIDConflict) {
		return fmt.Errorf("outbox: enqueue %s %s: %w", row.Kind, row.ID, err)
	}
	return nil
}

// job builds row's task and its options: the row id as the task id, its
// queue, deadline and retries, and its due time.
func (r *Relay) job(row models.Outbox) (*asynq.Task, []asynq.Option, error) {
	var headers map[string]string
	if row.RequestID != nil {
		headers = map[string]string{requestid.TaskHeader: *row.RequestID}
	}
	if row.Traceparent != nil {
		if headers == nil {
			headers = map[string]string{}
		}
		headers[tracing.TaskHeader] = *row.Traceparent
	}
	task, err := jobs.NewTaskWithHeaders(jobFor[row.Kind](row.ID), headers)
	if err != nil {
		return nil, nil, err
	}
	opts := []asynq.Option{asynq.TaskID(row.ID), asynq.Queue(r.queue),
		asynq.Retention(jobs.Retention), asynq.Timeout(jobs.EventsDeadline)}
	if row.Kind == KindProducer {
		q := r.ScriptQueue
		if q == "" {
			q = r.queue
		}
		opts = append(opts, asynq.Queue(q), asynq.Timeout(jobs.ScriptDeadline), asynq.MaxRetry(jobs.ProducerRetries))
	}
	if row.Kind == KindOCR {
		q := r.ExtractQueue
		if q == "" {
			q = r.queue
		}
		opts = append(opts, asynq.Queue(q), asynq.Timeout(jobs.ExtractDeadline), asynq.MaxRetry(jobs.OCRRetries))
	}
	if due := dueAt(row); due != nil {
		// Scheduled in Redis: it fires at its time on whichever worker is
		// running then, across restarts; the sweep (Owed) re-creates it
		// if Redis loses it.
		opts = append(opts, asynq.ProcessAt(*due))
	}
	return task, opts, nil
}

// dueAt is row's due time: its column, or for a row written before the
// column existed, its payload's due_at; nil is at once.
func dueAt(row models.Outbox) *time.Time {
	if row.DueAt != nil {
		return row.DueAt
	}
	var due Scheduled
	if err := row.Payload.Decode(&due); err == nil && due.DueAt != nil {
		return due.DueAt
	}
	return nil
}

// OwedBatch bounds the rows one Owed call returns.
const OwedBatch = 1000

// Owed returns the jobs of the rows sent but not done whose due time is
// before now, oldest due first: the jobs Redis may have lost. Enqueueing
// one whose job Redis still holds (queued, scheduled, running, retrying or
// retained after it finished) is refused as a duplicate of its task id, so
// the sweep that enqueues them may run in every worker at once
// (docs/architecture.md#12-postgres-records-redis-carries).
func (r *Relay) Owed(ctx context.Context, now time.Time) ([]jobs.Owed, error) {
	var rows []models.Outbox
	err := r.store.DB.WithContext(ctx).
		Where("sent_at IS NOT NULL AND done_at IS NULL AND kind IN ?", relayedKinds()).
		Where("COALESCE(due_at, sent_at) <= ?", now.UTC()).
		Order("created_at, id").Limit(OwedBatch).Find(&rows).Error
	if err != nil {
		return nil, fmt.Errorf("outbox: select owed: %w", err)
	}
	owed := make([]jobs.Owed, 0, len(rows))
	for _, row := range rows {
		task, opts, err := r.job(row)
		if err != nil {
			return nil, err
		}
		due := *row.SentAt
		if d := dueAt(row); d != nil {
			due = *d
		}
		owed = append(owed, jobs.Owed{ID: row.ID, Due: due, Task: task, Opts: opts})
	}
	return owed, nil
}

// MarkDone records that row id's job finished for good (MarkDone).
func (r *Relay) MarkDone(ctx context.Context, id string) error { return MarkDone(ctx, r.store.DB, id) }

// IsDone reports whether row id's job finished for good (IsDone).
func (r *Relay) IsDone(ctx context.Context, id string) (bool, error) {
	return IsDone(ctx, r.store.DB, id)
}

// Run relays until ctx is done: after each pass it goes again at once when
// the batch was full, else waits for r.PollInterval or a Nudge.
func (r *Relay) Run(ctx context.Context) {
	sub := r.redis.Subscribe(ctx, r.prefix+wakeChannel)
	defer sub.Close()
	wake := sub.Channel()
	nextStrayCheck := time.Now()
	for {
		n, err := r.RunOnce(ctx)
		wait := r.PollInterval
		switch {
		case ctx.Err() != nil:
			return
		case err != nil:
			r.log.WarnContext(ctx, "outbox relay pass failed", "error", err.Error(), "moved", n)
			wait = errorBackoff
		case n == BatchSize:
			continue
		}
		if time.Now().After(nextStrayCheck) {
			r.logStrays(ctx)
			nextStrayCheck = time.Now().Add(strayCheckInterval)
		}
		timer := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			timer.Stop()
			return
		case <-wake:
		case <-timer.C:
		}
		timer.Stop()
	}
}

// logStrays warns about unsent rows of kinds no job exists for: they were
// written by a newer (or broken) binary and wait for one that knows them.
func (r *Relay) logStrays(ctx context.Context) {
	var strays []struct {
		Kind  string
		Count int64
	}
	err := r.store.DB.WithContext(ctx).Model(&models.Outbox{}).
		Select("kind, count(*) AS count").
		Where("sent_at IS NULL AND kind NOT IN ?", relayedKinds()).
		Group("kind").Scan(&strays).Error
	if err != nil {
		r.log.WarnContext(ctx, "outbox: count unknown kinds", "error", err.Error())
		return
	}
	for _, s := range strays {
		r.log.WarnContext(ctx, "outbox rows of an unknown kind left unsent", "kind", s.Kind, "rows", s.Count)
	}
}

// Nudge wakes every relay at once instead of at its next poll. Call it after
// committing a transaction that wrote outbox rows; a failed nudge only costs
// latency, so callers may ignore its error.
func Nudge(ctx context.Context, rdb redis.UniversalClient, keyPrefix string) error {
	if err := rdb.Publish(ctx, keyPrefix+wakeChannel, "1").Err(); err != nil {
		return fmt.Errorf("outbox: nudge relay: %w", err)
	}
	return nil
}

// Prune deletes the rows done before cutoff (Prune): the worker's periodic pass.
func (r *Relay) Prune(ctx context.Context, cutoff time.Time) (int64, error) {
	return Prune(ctx, r.store.DB, cutoff)
}
