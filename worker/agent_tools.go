package worker

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/hibiken/asynq"

	"github.com/appruntime/appruntime/internal/jobwait"
	"github.com/appruntime/appruntime/jobs"
)

// registerAgentTools mounts agent tool calls (and their cards' buttons) on
// the lookup queue: the job's context ends at the API's deadline, and the
// target's outcome is published once for the API, which records it.
func (w *Worker) registerAgentTools() {
	w.muxes[w.Queues.Lookup].Handle(jobs.AgentToolCall{}.Kind(),
		jobwait.Handler(w.Redis, w.KeyPrefix, func(ctx context.Context, t *asynq.Task) (json.RawMessage, error) {
			args, err := jobs.Decode[jobs.AgentToolCall](t)
			if err != nil {
				return nil, err
			}
			out, err := w.AgentCalls.Execute(ctx, args)
			if err != nil {
				return nil, err
			}
			raw, err := json.Marshal(out)
			if err != nil {
				return nil, fmt.Errorf("worker: encode agent tool outcome: %w", err)
			}
			return raw, nil
		}))
}
