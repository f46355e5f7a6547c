package worker_test

import (
	"slices"
	"testing"
	"time"

	"github.com/hibiken/asynq"
	"github.com/stretchr/testify/require"

	"github.com/appruntime/appruntime/internal/testkit"
)

// TestAQueueClassSharesItsConcurrencyAmongItsServers: WORKER_SERVERS_LOOKUP
// asynq servers take the lookup queue's jobs, WORKER_CONCURRENCY_LOOKUP
// shared among them; a class left at one server keeps one.
func TestAQueueClassSharesItsConcurrencyAmongItsServers(t *testing.T) {
	t.Parallel()
	cfg := testkit.Config(testkit.DatabaseURL(), testkit.RedisURL())
	cfg.WorkerQueues = []string{"lookup", "script"}
	cfg.QueueConcurrency = map[string]int{"lookup": 5, "script": 3}
	cfg.QueueServers = map[string]int{"lookup": 2, "script": 1}
	p := newPlatform(t, cfg)
	runWorker(t, p)

	inspector := asynq.NewInspectorFromRedisClient(p.Redis)
	lookup, script := p.Queues.Lookup, p.Queues.Script
	shares := func(queue string) []int {
		servers, err := inspector.Servers()
		require.NoError(t, err)
		var out []int
		for _, s := range servers {
			if _, ok := s.Queues[queue]; ok {
				out = append(out, s.Concurrency)
			}
		}
		slices.Sort(out)
		return out
	}
	require.Eventually(t, func() bool { return len(shares(lookup)) == 2 && len(shares(script)) == 1 }, 10*time.Second, 50*time.Millisecond)
	require.Equal(t, []int{2, 3}, shares(lookup))
	require.Equal(t, []int{3}, shares(script))
}
