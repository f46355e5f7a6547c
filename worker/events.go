package worker

import (
	"context"
	"fmt"
	"time"

	"github.com/hibiken/asynq"

	"github.com/appruntime/appruntime/internal/apperr"
	"github.com/appruntime/appruntime/internal/review"
	"github.com/appruntime/appruntime/jobs"
)

// registerEvents mounts the events queue's handlers (resume events, webhook
// deliveries, the key-detail summary pass, await and claim expiries) and the
// outbox relay loop.
func (w *Worker) registerEvents() {
	mux := w.muxes[w.Queues.Events]
	mux.HandleFunc(jobs.ResumeEvent{}.Kind(), func(ctx context.Context, t *asynq.Task) error {
		args, err := jobs.Decode[jobs.ResumeEvent](t)
		if err != nil {
			return err
		}
		return unretryable(w.Resumes.HandleResume(ctx, args.OutboxID))
	})
	mux.HandleFunc(jobs.WebhookDelivery{}.Kind(), func(ctx context.Context, t *asynq.Task) error {
		args, err := jobs.Decode[jobs.WebhookDelivery](t)
		if err != nil {
			return err
		}
		return unretryable(w.Resumes.HandleWebhook(ctx, args.EventID))
	})
	mux.HandleFunc(jobs.Summary{}.Kind(), func(ctx context.Context, t *asynq.Task) error {
		args, err := jobs.Decode[jobs.Summary](t)
		if err != nil {
			return err
		}
		return unretryable(w.Tasks.Summarize(ctx, args.OutboxID))
	})
	mux.HandleFunc(jobs.AwaitExpiry{}.Kind(), func(ctx context.Context, t *asynq.Task) error {
		args, err := jobs.Decode[jobs.AwaitExpiry](t)
		if err != nil {
			return err
		}
		return unretryable(w.Parked.Expire(ctx, args.OutboxID))
	})
	mux.HandleFunc(jobs.ClaimExpiry{}.Kind(), func(ctx context.Context, t *asynq.Task) error {
		args, err := jobs.Decode[jobs.ClaimExpiry](t)
		if err != nil {
			return err
		}
		_, err = w.Queue.ExpireClaim(ctx, args.TaskID, args.ExpiresAt)
		return err
	})
	w.loops = append(w.loops, w.Relay.Run)
}

// unretryable marks errors that a retry cannot fix (a malformed or missing
// event, a refused destination) so asynq archives the job at once instead
// of retrying it.
func unretryable(err error) error {
	switch apperr.CodeOf(err) {
	case apperr.Invalid, apperr.Forbidden, apperr.NotFound:
		return fmt.Errorf("%w: %w", err, asynq.SkipRetry)
	}
	return err
}

// retryDelay is the backoff of failed jobs: a webhook delivery's own
// schedule, asynq's default for every other kind.
func retryDelay(n int, err error, t *asynq.Task) time.Duration {
	if t.Type() == (jobs.WebhookDelivery{}).Kind() {
		return review.WebhookRetryDelay(n)
	}
	return asynq.DefaultRetryDelayFunc(n, err, t)
}
