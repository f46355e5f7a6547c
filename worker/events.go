package worker

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/hibiken/asynq"

	"github.com/appruntime/appruntime/internal/apperr"
	"github.com/appruntime/appruntime/internal/capability"
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
		return w.owedOnce(ctx, args.OutboxID, func() error { return unretryable(w.Tasks.Summarize(ctx, args.OutboxID)) })
	})
	mux.HandleFunc(jobs.AwaitExpiry{}.Kind(), func(ctx context.Context, t *asynq.Task) error {
		args, err := jobs.Decode[jobs.AwaitExpiry](t)
		if err != nil {
			return err
		}
		return w.owedOnce(ctx, args.OutboxID, func() error { return unretryable(w.Parked.Expire(ctx, args.OutboxID)) })
	})
	mux.HandleFunc(jobs.ClaimExpiry{}.Kind(), func(ctx context.Context, _ *asynq.Task) error {
		_, err := w.Queue.ClearExpired(ctx, time.Now())
		return err
	})
	w.loops = append(w.loops, w.Relay.Run)
}

// owedOnce runs fn, the job of outbox row outboxID, unless Postgres says
// the row is already done (a job re-created by the sweep after it ran), and
// marks the row done when the job finished for good: it succeeded, was
// refused, or used its last retry.
func (w *Worker) owedOnce(ctx context.Context, outboxID string, fn func() error) error {
	done, err := w.Relay.IsDone(ctx, outboxID)
	if err != nil || done {
		return err
	}
	err = fn()
	if err == nil || errors.Is(err, asynq.SkipRetry) || lastTry(ctx) {
		if markErr := w.Relay.MarkDone(ctx, outboxID); markErr != nil {
			return errors.Join(err, markErr)
		}
	}
	return err
}

// lastTry says whether the job ctx runs is on its last try: asynq retries
// it no more, whatever it answers.
func lastTry(ctx context.Context) bool {
	retried, _ := asynq.GetRetryCount(ctx)
	maxRetry, _ := asynq.GetMaxRetry(ctx)
	return retried >= maxRetry
}

// ocrPassWait is the least a pass that waits its turn (ErrOCRPassWaits)
// waits before it looks again.
const ocrPassWait = 10 * time.Second

// isFailure says whether a job's error counts as a failed try: a pass that
// waits its turn has not tried.
func isFailure(err error) bool { return err != nil && !errors.Is(err, capability.ErrOCRPassWaits) }

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
	if errors.Is(err, capability.ErrOCRPassWaits) {
		// Its workspace's passes run for seconds to minutes: look again
		// in 10 to 20 s.
		return ocrPassWait + rand.N(ocrPassWait)
	}
	if t.Type() == (jobs.WebhookDelivery{}).Kind() {
		// The attempt recorded its next time in Postgres; the job waits
		// for that same time.
		if retry, ok := errors.AsType[*review.WebhookRetry](err); ok {
			return retry.Delay
		}
		return review.WebhookRetryDelay(n)
	}
	return asynq.DefaultRetryDelayFunc(n, err, t)
}
