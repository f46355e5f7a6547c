package worker

import (
	"context"
	"time"

	"github.com/appruntime/appruntime/internal/config"
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
	w.loops = append(w.loops, every(IntentSweepInterval, w.sweepIntents), every(OutboxPruneInterval, w.pruneOutbox))
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
