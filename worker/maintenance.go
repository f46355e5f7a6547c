package worker

import (
	"context"
	"errors"
	"slices"
	"time"

	"github.com/hibiken/asynq"

	"github.com/appruntime/appruntime/internal/config"
	"github.com/appruntime/appruntime/internal/notify"
	"github.com/appruntime/appruntime/jobs"
)

// Maintenance intervals. Each pass also runs once when the worker starts.
const (
	// IntentSweepInterval is how often abandoned write intents are
	// recorded as outcome unknown (intent.Sweep).
	IntentSweepInterval = 30 * time.Second
	// OutboxPruneInterval is how often sent outbox rows older than
	// OUTBOX_RETENTION are deleted (outbox.Prune).
	OutboxPruneInterval = time.Hour
)

// registerMaintenance adds the periodic passes. Every worker runs them; two
// running at once do each row once (they are safe to overlap).
func (w *Worker) registerMaintenance() {
	interval := w.SweepInterval
	if interval <= 0 { // a configuration built by hand, not by config.Load
		interval = config.DefaultSweepInterval
	}
	w.loops = append(w.loops, every(IntentSweepInterval, w.sweepIntents), every(OutboxPruneInterval, w.pruneOutbox),
		every(interval, func(ctx context.Context) { w.SweepOwed(ctx) }), every(interval, w.failCutCalls),
		every(interval, w.clearExpiredClaims))
	if w.Notify != nil {
		notifyEvery := w.NotifyInterval
		if notifyEvery <= 0 {
			notifyEvery = config.DefaultNotifyInterval
		}
		w.loops = append(w.loops, every(notifyEvery, w.notifyPass))
	}
}

// notifyPass tells and escalates review pools' waiting work
// (docs/admins.md#notifications-of-waiting-work); every replica runs it,
// and each wait is told once whoever runs it.
func (w *Worker) notifyPass(ctx context.Context) {
	r, err := w.Notify.Pass(ctx)
	if err != nil && ctx.Err() == nil {
		w.Log.WarnContext(ctx, "notify pass failed", "error", err.Error())
	}
	if r != (notify.PassResult{}) {
		w.Log.InfoContext(ctx, "notify pass", "escalated", r.Escalated, "digests", r.Digests, "delivered", r.Delivered, "failed", r.Failed)
	}
}

// every runs fn at once and then every d until ctx is done.
func every(d time.Duration, fn func(context.Context)) func(context.Context) {
	return func(ctx context.Context) {
		for {
			fn(ctx)
			timer := time.NewTimer(d)
			select {
			case <-ctx.Done():
				timer.Stop()
				return
			case <-timer.C:
			}
		}
	}
}

func (w *Worker) sweepIntents(ctx context.Context) { w.SweepIntents(ctx) }

// failCutCalls fails the agent tool calls an api process left running when
// it stopped (agentcall.FailCutCalls).
func (w *Worker) failCutCalls(ctx context.Context) {
	if w.AgentCalls == nil {
		return
	}
	n, err := w.AgentCalls.FailCutCalls(ctx, time.Now())
	if err != nil && ctx.Err() == nil {
		w.Log.WarnContext(ctx, "cut tool calls sweep failed", "error", err.Error(), "failed", n)
		return
	}
	if n > 0 {
		w.Log.InfoContext(ctx, "tool calls cut off by a stopped process failed", "count", n)
	}
}

func (w *Worker) pruneOutbox(ctx context.Context) {
	retention := w.OutboxRetention
	if retention <= 0 { // a configuration built by hand, not by config.Load
		retention = config.DefaultOutboxRetention
	}
	n, err := w.Relay.Prune(ctx, time.Now().Add(-retention))
	if err != nil && ctx.Err() == nil {
		w.Log.WarnContext(ctx, "outbox prune failed", "error", err.Error(), "pruned", n)
		return
	}
	if n > 0 {
		w.Log.InfoContext(ctx, "sent outbox rows pruned", "count", n, "retention", retention.String())
	}
}

// clearExpiredClaims clears the review claims past their time
// (claim.Queue.ClearExpired): they are free already, this tidies their rows.
func (w *Worker) clearExpiredClaims(ctx context.Context) {
	n, err := w.Queue.ClearExpired(ctx, time.Now())
	if err != nil && ctx.Err() == nil {
		w.Log.WarnContext(ctx, "expired review claims not cleared", "error", err.Error(), "cleared", n)
	}
}

// SweepOwed enqueues again every job Postgres says is owed and due (outbox
// rows sent but not done), in the order of
// their due times, and returns how many Redis had lost. Each job keeps its
// task id, so one Redis still holds is refused as a duplicate: every
// replica may sweep at once, and nothing runs twice
// (docs/architecture.md#12-postgres-records-redis-carries).
func (w *Worker) SweepOwed(ctx context.Context) int {
	now := time.Now()
	owed, err := w.Relay.Owed(ctx, now)
	if err != nil {
		if ctx.Err() == nil {
			w.Log.WarnContext(ctx, "owed jobs sweep failed", "error", err.Error())
		}
		return 0
	}
	slices.SortStableFunc(owed, func(a, b jobs.Owed) int { return a.Due.Compare(b.Due) })
	client := asynq.NewClientFromRedisClient(w.Redis)
	recreated := 0
	for _, o := range owed {
		_, err := client.EnqueueContext(ctx, o.Task, o.Opts...)
		switch {
		case err == nil:
			recreated++
		case errors.Is(err, asynq.ErrTaskIDConflict):
			// Redis still holds it: nothing was lost.
		default:
			if ctx.Err() == nil {
				w.Log.WarnContext(ctx, "owed job not re-created", "job_id", o.ID, "error", err.Error())
			}
			return recreated
		}
	}
	if recreated > 0 {
		w.Log.WarnContext(ctx, "owed jobs Redis had lost were re-created", "count", recreated)
	}
	return recreated
}
