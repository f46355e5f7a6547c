package metrics

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"time"

	"github.com/hibiken/asynq"
	"github.com/prometheus/client_golang/prometheus"
)

// QueueSource names the asynq queues to export and the inspector that reads
// them. Queue metrics describe Redis, not this process: every process that
// exports them reports the same values, so aggregate them with max, not sum.
type QueueSource struct {
	Inspector *asynq.Inspector
	Queues    []string
}

// The states of a queue's tasks, the state label of appruntime_queue_depth.
var queueStates = []string{"pending", "active", "scheduled", "retry", "archived", "completed", "aggregating"}

var (
	queueDepthDesc = prometheus.NewDesc(prometheus.BuildFQName(Namespace, "queue", "depth"),
		"Tasks in an asynq queue, by state.", []string{"queue", "state"}, nil)
	queueLatencyDesc = prometheus.NewDesc(prometheus.BuildFQName(Namespace, "queue", "latency_seconds"),
		"Age of the queue's oldest pending task: how long the next task has waited; 0 when none is pending.", []string{"queue"}, nil)
	queuePausedDesc = prometheus.NewDesc(prometheus.BuildFQName(Namespace, "queue", "paused"),
		"1 while the queue is paused (its tasks stay pending), else 0.", []string{"queue"}, nil)
	queueProcessedDesc = prometheus.NewDesc(prometheus.BuildFQName(Namespace, "queue", "processed_total"),
		"Tasks the queue's workers have finished, successfully or not, since the queue was created.", []string{"queue"}, nil)
	queueFailedDesc = prometheus.NewDesc(prometheus.BuildFQName(Namespace, "queue", "failed_total"),
		"Task runs that failed, since the queue was created.", []string{"queue"}, nil)
)

// queueCollector reads the queues' state from Redis on scrape, at most once
// per ScrapeCacheTTL.
type queueCollector struct {
	infos *cachedRead[[]*asynq.QueueInfo]
	log   *slog.Logger
}

func newQueueCollector(src QueueSource, log *slog.Logger) *queueCollector {
	read := func(ctx context.Context) ([]*asynq.QueueInfo, error) {
		known, err := src.Inspector.Queues()
		if err != nil {
			return nil, fmt.Errorf("metrics: list queues: %w", err)
		}
		var out []*asynq.QueueInfo
		for _, q := range src.Queues {
			if !slices.Contains(known, q) {
				// Nothing was ever enqueued on it: it is empty.
				out = append(out, &asynq.QueueInfo{Queue: q})
				continue
			}
			// The inspector takes no context; the deadline is checked
			// between queues.
			if err := ctx.Err(); err != nil {
				return nil, fmt.Errorf("metrics: queue %s: %w", q, err)
			}
			info, err := src.Inspector.GetQueueInfo(q)
			if err != nil {
				return nil, fmt.Errorf("metrics: queue %s: %w", q, err)
			}
			out = append(out, info)
		}
		return out, nil
	}
	return &queueCollector{infos: &cachedRead[[]*asynq.QueueInfo]{read: read, now: time.Now}, log: log}
}

func (c *queueCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{queueDepthDesc, queueLatencyDesc, queuePausedDesc, queueProcessedDesc, queueFailedDesc} {
		ch <- d
	}
}

func (c *queueCollector) Collect(ch chan<- prometheus.Metric) {
	infos, err := c.infos.get()
	if err != nil {
		c.log.Warn("metrics: read queues", "error", err.Error())
		ch <- prometheus.NewInvalidMetric(queueDepthDesc, err)
		return
	}
	for _, q := range infos {
		counts := []int{q.Pending, q.Active, q.Scheduled, q.Retry, q.Archived, q.Completed, q.Aggregating}
		for i, state := range queueStates {
			ch <- prometheus.MustNewConstMetric(queueDepthDesc, prometheus.GaugeValue, float64(counts[i]), q.Queue, state)
		}
		ch <- prometheus.MustNewConstMetric(queueLatencyDesc, prometheus.GaugeValue, q.Latency.Seconds(), q.Queue)
		paused := 0.0
		if q.Paused {
			paused = 1
		}
		ch <- prometheus.MustNewConstMetric(queuePausedDesc, prometheus.GaugeValue, paused, q.Queue)
		ch <- prometheus.MustNewConstMetric(queueProcessedDesc, prometheus.CounterValue, float64(q.ProcessedTotal), q.Queue)
		ch <- prometheus.MustNewConstMetric(queueFailedDesc, prometheus.CounterValue, float64(q.FailedTotal), q.Queue)
	}
}
