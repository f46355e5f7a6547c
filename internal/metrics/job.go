package metrics

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/hibiken/asynq"
	"github.com/prometheus/client_golang/prometheus"
)

// Job outcomes, the outcome label of appruntime_job_duration_seconds.
const (
	JobSucceeded = "succeeded" // the handler returned nil
	JobRetried   = "retried"   // it failed and will run again
	JobFailed    = "failed"    // it failed for good: no retry left, or one that retrying cannot fix (asynq.SkipRetry); archived
	JobCanceled  = "canceled"  // its context ended first (deadline, cancellation, shutdown)
)

var jobOutcomes = []string{JobSucceeded, JobRetried, JobFailed, JobCanceled}

// jobMetrics is the job histogram and its children by kind, then outcome.
type jobMetrics struct {
	vec    *prometheus.HistogramVec
	mu     sync.RWMutex
	byKind map[string][]prometheus.Observer
}

func newJobMetrics(reg prometheus.Registerer) *jobMetrics {
	j := &jobMetrics{
		vec: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Namespace: Namespace, Name: "job_duration_seconds",
			Help: "Jobs run by this worker, by kind and outcome (succeeded, retried, failed, canceled); _count is the number of runs.",
			// The script queue's deadline is 900 s.
			Buckets: []float64{.01, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600, 900},
		}, []string{"kind", "outcome"}),
		byKind: map[string][]prometheus.Observer{},
	}
	reg.MustRegister(j.vec)
	return j
}

func (j *jobMetrics) observers(kind string) []prometheus.Observer {
	j.mu.RLock()
	obs, ok := j.byKind[kind]
	j.mu.RUnlock()
	if ok {
		return obs
	}
	j.mu.Lock()
	defer j.mu.Unlock()
	if obs, ok = j.byKind[kind]; !ok {
		for _, out := range jobOutcomes {
			obs = append(obs, j.vec.WithLabelValues(kind, out))
		}
		j.byKind[kind] = obs
	}
	return obs
}

// ObserveJob records one run of a job of kind: err is what its handler
// returned, ctx the context it ran with (asynq's, which knows the retry
// count), d how long it ran.
func (m *Metrics) ObserveJob(ctx context.Context, kind string, err error, d time.Duration) {
	if m == nil {
		return
	}
	m.jobs.observers(kind)[outcomeIndex(ctx, err)].Observe(d.Seconds())
}

func outcomeIndex(ctx context.Context, err error) int {
	switch {
	case err == nil:
		return 0
	case ctx.Err() != nil || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded):
		return 3
	case errors.Is(err, asynq.SkipRetry):
		return 2
	}
	retried, ok1 := asynq.GetRetryCount(ctx)
	maxRetry, ok2 := asynq.GetMaxRetry(ctx)
	if ok1 && ok2 && retried >= maxRetry {
		return 2
	}
	return 1
}

// JobMiddleware is an asynq middleware that records every job's duration and
// outcome by its kind (the task type). A nil *Metrics passes jobs through.
func (m *Metrics) JobMiddleware(next asynq.Handler) asynq.Handler {
	if m == nil {
		return next
	}
	return asynq.HandlerFunc(func(ctx context.Context, t *asynq.Task) error {
		start := time.Now()
		err := next.ProcessTask(ctx, t)
		m.ObserveJob(ctx, t.Type(), err, time.Since(start))
		return err
	})
}
