package queue_test

import (
	"context"
	"strings"
	"testing"

	"github.com/alicebob/miniredis/v2"
	"github.com/alicebob/miniredis/v2/server"
	"github.com/hibiken/asynq"
	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/appruntime/appruntime/internal/queue"
)

// TestARedisWithoutScriptsDegrades: on a Redis that refuses scripts (as a
// managed Redis with EVAL disabled does) a queue's counts, memory and daily
// history are reported as not available on this Redis, not as an error, and
// a queue without tasks still charts empty days; on the same Redis with
// scripts allowed they are read.
func TestARedisWithoutScriptsDegrades(t *testing.T) {
	t.Parallel()
	m := miniredis.RunT(t)
	rc := redis.NewClient(&redis.Options{Addr: m.Addr()})
	t.Cleanup(func() { _ = rc.Close() })
	_, err := asynq.NewClientFromRedisClient(rc).Enqueue(asynq.NewTask("k", []byte(`{}`)), asynq.Queue("q"))
	require.NoError(t, err)
	s := queue.New(nil, rc, "q", "empty")
	ctx := context.Background()

	qs, err := s.Queues(ctx)
	require.NoError(t, err)
	require.Equal(t, 1, qs[0].Pending)
	require.False(t, qs[0].MemoryUnavailable)
	require.NotEqual(t, "not available on this Redis", qs[0].Memory())
	h, err := s.History(ctx, "q", queue.HistoryDays)
	require.NoError(t, err)
	require.Empty(t, h.Unavailable)
	require.Len(t, h.Days, queue.HistoryDays)

	m.Server().SetPreHook(func(p *server.Peer, cmd string, _ ...string) bool {
		if strings.HasPrefix(strings.ToUpper(cmd), "EVAL") {
			p.WriteError("ERR unknown command '" + cmd + "'")
			return true
		}
		return false
	})
	require.NoError(t, asynq.NewInspectorFromRedisClient(rc).PauseQueue("q"))
	qs, err = s.Queues(ctx)
	require.NoError(t, err)
	require.True(t, qs[0].MemoryUnavailable)
	require.True(t, qs[0].Paused, "read without the script")
	require.Equal(t, "not available on this Redis", qs[0].Memory())
	h, err = s.History(ctx, "q", queue.HistoryDays)
	require.NoError(t, err)
	require.Contains(t, h.Unavailable, "not available on this Redis")
	require.Empty(t, h.Days)
	h, err = s.History(ctx, "empty", queue.HistoryDays)
	require.NoError(t, err)
	require.Len(t, h.Days, queue.HistoryDays)

	// A Redis that is down is an error, not "not available".
	m.Close()
	_, err = s.History(ctx, "q", queue.HistoryDays)
	require.Error(t, err)
}
