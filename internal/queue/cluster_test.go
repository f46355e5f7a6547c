package queue_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hibiken/asynq"
	"github.com/stretchr/testify/require"

	"github.com/appruntime/appruntime/internal/queue"
	"github.com/appruntime/appruntime/internal/testkit"
)

// TestQueuesOnACluster: on a three-master Redis Cluster, tasks enqueued on
// two queues (whose keys asynq tags with the queue name, so each queue's
// keys share a slot and the two queues may sit on different nodes) are
// counted, listed and read by the Service, then processed by an asynq
// server on the same cluster, each once, and the counts follow.
func TestQueuesOnACluster(t *testing.T) {
	t.Parallel()
	env := testkit.ClusterRedis(t)
	queues := []string{env.Queues.Lookup, env.Queues.Events}
	s := queue.New(nil, env.Client, queues...)
	ctx := context.Background()
	client := asynq.NewClientFromRedisClient(env.Client)
	var ids []string
	for _, q := range queues {
		for range 3 {
			info, err := client.Enqueue(asynq.NewTask("cluster_test", []byte(`{}`)), asynq.Queue(q))
			require.NoError(t, err)
			ids = append(ids, info.ID)
		}
	}

	qs, err := s.Queues(ctx)
	require.NoError(t, err)
	for i, q := range qs {
		require.Equal(t, queues[i], q.Name)
		require.Equal(t, 3, q.Pending, q.Name)
		require.False(t, q.MemoryUnavailable, "asynq's queue script runs on the queue's node")
	}
	l, err := s.Tasks(ctx, queues[0], queue.StatePending, queue.Filter{})
	require.NoError(t, err)
	require.Len(t, l.Tasks, 3)
	d, err := s.TaskDetail(ctx, queues[0], ids[0])
	require.NoError(t, err)
	require.Equal(t, ids[0], d.ID)

	var ran atomic.Int32
	srv := asynq.NewServerFromRedisClient(env.Client, asynq.Config{
		Concurrency: 2, Queues: map[string]int{queues[0]: 1, queues[1]: 1},
		TaskCheckInterval: 5 * time.Millisecond, LogLevel: asynq.FatalLevel,
	})
	mux := asynq.NewServeMux()
	mux.HandleFunc("cluster_test", func(context.Context, *asynq.Task) error { ran.Add(1); return nil })
	require.NoError(t, srv.Start(mux))
	t.Cleanup(srv.Shutdown)
	require.Eventually(t, func() bool {
		qs, err := s.Queues(ctx)
		return err == nil && qs[0].Pending+qs[0].Active+qs[1].Pending+qs[1].Active == 0 && qs[0].ProcessedToday == 3 && qs[1].ProcessedToday == 3
	}, 30*time.Second, 50*time.Millisecond, "the server processes every task")
	time.Sleep(100 * time.Millisecond)
	require.Equal(t, int32(6), ran.Load(), "each task ran once")
}
