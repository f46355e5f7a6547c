package worker

import (
	"context"
	"encoding/json"

	"github.com/hibiken/asynq"

	"github.com/appruntime/appruntime/internal/apperr"
	"github.com/appruntime/appruntime/internal/jobwait"
	"github.com/appruntime/appruntime/internal/runtime"
	"github.com/appruntime/appruntime/jobs"
)

// registerRuns mounts /run's jobs on the lookup, extract and script queues
// (each its own asynq server, so slow work never starves fast work). The
// job's context ends at the API's deadline; its outcome is published once.
func (w *Worker) registerRuns() {
	h := jobwait.Handler(w.Redis, w.KeyPrefix, func(ctx context.Context, t *asynq.Task) (json.RawMessage, error) {
		args, err := jobs.Decode[jobs.RunTool](t)
		if err != nil {
			return nil, err
		}
		id, _ := asynq.GetTaskID(ctx)
		return w.ToolRuns.Run(ctx, id, args)
	})
	for _, q := range []string{w.Queues.Lookup, w.Queues.Extract, w.Queues.Script} {
		w.muxes[q].Handle(jobs.RunTool{}.Kind(), h)
	}
	// An upload's OCR pass, with asynq's retries: each goes on where the
	// last stopped (capability.Service.OCRFile). A pass whose workspace
	// runs its share of passes waits its turn (ErrOCRPassWaits: retried,
	// not counted as a try), except on its last try.
	if w.Documents != nil {
		w.muxes[w.Queues.Extract].HandleFunc(jobs.OCRFile{}.Kind(), func(ctx context.Context, t *asynq.Task) error {
			args, err := jobs.Decode[jobs.OCRFile](t)
			if err != nil {
				return err
			}
			return w.owedOnce(ctx, args.OutboxID, func() error {
				return unretryable(w.Documents.OCROutbox(ctx, args.OutboxID, !lastTry(ctx)))
			})
		})
	}
	// Producers run with asynq's retries: the last attempt settles the
	// step whatever happens.
	w.muxes[w.Queues.Script].HandleFunc(jobs.RunProducer{}.Kind(), func(ctx context.Context, t *asynq.Task) error {
		args, err := jobs.Decode[jobs.RunProducer](t)
		if err != nil {
			return err
		}
		seed := w.Seed
		if seed == nil {
			seed = func(context.Context, jobs.ProducerJob, []runtime.SeedWrite) (int64, error) {
				return 0, apperr.NotImplementedf("this worker cannot seed rows")
			}
		}
		return w.owedOnce(ctx, args.OutboxID, func() error {
			return w.ToolRuns.ProduceOutbox(ctx, args.OutboxID, seed, lastTry(ctx))
		})
	})
}
