package outbox_test

import (
	"context"
	"io"
	"log/slog"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hibiken/asynq"
	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"
	"gorm.io/gorm"

	"github.com/appruntime/appruntime/internal/logging"
	"github.com/appruntime/appruntime/internal/outbox"
	"github.com/appruntime/appruntime/internal/store"
	"github.com/appruntime/appruntime/internal/testkit"
	"github.com/appruntime/appruntime/jobs"
	"github.com/appruntime/appruntime/models"
)

var quiet = logging.New(io.Discard, slog.LevelError)

// addRows commits n outbox rows of kind and returns their ids in order.
func addRows(t *testing.T, st *store.Store, kind string, n int) []string {
	t.Helper()
	ids := make([]string, 0, n)
	require.NoError(t, st.Tx(context.Background(), func(tx *gorm.DB) error {
		for i := range n {
			id, err := outbox.Add(tx, kind, map[string]int{"n": i})
			if err != nil {
				return err
			}
			ids = append(ids, id)
		}
		return nil
	}))
	return ids
}

func unsent(t *testing.T, st *store.Store) []models.Outbox {
	t.Helper()
	var rows []models.Outbox
	require.NoError(t, st.DB.Where("sent_at IS NULL").Order("created_at").Find(&rows).Error)
	return rows
}

// consumer is a real asynq server on queue counting the jobs it runs by outbox id.
type consumer struct {
	mu   sync.Mutex
	runs map[string]int
}

func startConsumer(t *testing.T, rd testkit.RedisEnv) *consumer {
	t.Helper()
	c := &consumer{runs: map[string]int{}}
	record := func(id string) {
		c.mu.Lock()
		c.runs[id]++
		c.mu.Unlock()
	}
	mux := asynq.NewServeMux()
	mux.HandleFunc(jobs.ResumeEvent{}.Kind(), func(_ context.Context, task *asynq.Task) error {
		args, err := jobs.Decode[jobs.ResumeEvent](task)
		if err == nil {
			record(args.OutboxID)
		}
		return err
	})
	mux.HandleFunc(jobs.Summary{}.Kind(), func(_ context.Context, task *asynq.Task) error {
		args, err := jobs.Decode[jobs.Summary](task)
		if err == nil {
			record(args.OutboxID)
		}
		return err
	})
	srv := asynq.NewServerFromRedisClient(rd.Client, asynq.Config{
		Concurrency: 4, Queues: map[string]int{rd.Queues.Events: 1},
		TaskCheckInterval: 50 * time.Millisecond, LogLevel: asynq.FatalLevel,
	})
	require.NoError(t, srv.Start(mux))
	t.Cleanup(srv.Shutdown)
	return c
}

func (c *consumer) snapshot() map[string]int {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make(map[string]int, len(c.runs))
	for k, v := range c.runs {
		out[k] = v
	}
	return out
}

func queueInfo(t *testing.T, rd testkit.RedisEnv) *asynq.QueueInfo {
	t.Helper()
	info, err := asynq.NewInspectorFromRedisClient(rd.Client).GetQueueInfo(rd.Queues.Events)
	require.NoError(t, err)
	return info
}

func TestRowsCommittedWhileStoppedAreDeliveredOnce(t *testing.T) {
	t.Parallel()
	st, rd := testkit.Schema(t), testkit.Redis(t)
	resumes := addRows(t, st, outbox.KindResumeEvent, 4)
	summaries := addRows(t, st, outbox.KindSummary, 2)
	stray := addRows(t, st, "not_a_kind", 1)
	c := startConsumer(t, rd)

	relay := outbox.NewRelay(st, rd.Client, rd.Prefix, rd.Queues.Events, quiet)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); relay.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })

	want := map[string]int{}
	for _, id := range append(resumes, summaries...) {
		want[id] = 1
	}
	require.Eventually(t, func() bool { return len(c.snapshot()) == len(want) }, 10*time.Second, 20*time.Millisecond)
	require.Eventually(t, func() bool { return queueInfo(t, rd).Completed == len(want) }, 5*time.Second, 20*time.Millisecond)
	time.Sleep(3 * outbox.DefaultPollInterval) // further passes must not enqueue again
	require.Equal(t, want, c.snapshot())

	left := unsent(t, st)
	require.Len(t, left, 1, "a row of an unknown kind stays unsent")
	require.Equal(t, stray[0], left[0].ID)
}

func TestEnqueuedButNotMarkedYieldsOneJob(t *testing.T) {
	t.Parallel()
	st, rd := testkit.Schema(t), testkit.Redis(t)
	ids := addRows(t, st, outbox.KindResumeEvent, 3)
	relay := outbox.NewRelay(st, rd.Client, rd.Prefix, rd.Queues.Events, quiet)
	ctx := context.Background()

	n, err := relay.RunOnce(ctx)
	require.NoError(t, err)
	require.Equal(t, 3, n)
	// The relay "crashed" after enqueueing: the rows are unsent again.
	require.NoError(t, st.DB.Model(&models.Outbox{}).Where("id IN ?", ids).Update("sent_at", nil).Error)
	require.Len(t, unsent(t, st), 3)

	n, err = relay.RunOnce(ctx)
	require.NoError(t, err)
	require.Equal(t, 3, n, "duplicates are treated as already enqueued and marked")
	require.Empty(t, unsent(t, st))

	tasks, err := asynq.NewInspectorFromRedisClient(rd.Client).ListPendingTasks(rd.Queues.Events, asynq.PageSize(100))
	require.NoError(t, err)
	got := map[string]bool{}
	for _, task := range tasks {
		got[task.ID] = true
		require.Equal(t, jobs.ResumeEvent{}.Kind(), task.Type)
		args, err := jobs.Decode[jobs.ResumeEvent](asynq.NewTask(task.Type, task.Payload))
		require.NoError(t, err)
		require.Equal(t, task.ID, args.OutboxID, "the task id is the outbox id")
	}
	require.Len(t, tasks, 3)
	for _, id := range ids {
		require.True(t, got[id], id)
	}
}

func TestCompletedJobIsNotRunAgain(t *testing.T) {
	t.Parallel()
	st, rd := testkit.Schema(t), testkit.Redis(t)
	ids := addRows(t, st, outbox.KindResumeEvent, 1)
	c := startConsumer(t, rd)
	relay := outbox.NewRelay(st, rd.Client, rd.Prefix, rd.Queues.Events, quiet)
	ctx := context.Background()

	_, err := relay.RunOnce(ctx)
	require.NoError(t, err)
	require.Eventually(t, func() bool { return queueInfo(t, rd).Completed == 1 }, 10*time.Second, 20*time.Millisecond)
	require.NoError(t, st.DB.Model(&models.Outbox{}).Where("id = ?", ids[0]).Update("sent_at", nil).Error)

	n, err := relay.RunOnce(ctx)
	require.NoError(t, err)
	require.Equal(t, 1, n)
	time.Sleep(300 * time.Millisecond)
	require.Equal(t, map[string]int{ids[0]: 1}, c.snapshot(), "the retained task id refuses the re-enqueue")
	info := queueInfo(t, rd)
	require.Equal(t, 1, info.Completed)
	require.Zero(t, info.Pending)
}

func TestRacingRelaysEnqueueEachRowOnce(t *testing.T) {
	t.Parallel()
	st, rd := testkit.Schema(t), testkit.Redis(t)
	const rows = 2*outbox.BatchSize + 37
	ids := addRows(t, st, outbox.KindResumeEvent, rows)

	var moved atomic.Int64
	var wg sync.WaitGroup
	errs := make(chan error, 4)
	for range 4 {
		relay := outbox.NewRelay(st, rd.Client, rd.Prefix, rd.Queues.Events, quiet)
		wg.Go(func() {
			for {
				n, err := relay.RunOnce(context.Background())
				if err != nil {
					errs <- err
					return
				}
				if n == 0 && len(unsent(t, st)) == 0 {
					return
				}
				moved.Add(int64(n))
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
	require.EqualValues(t, rows, moved.Load(), "SKIP LOCKED hands each row to one relay")
	require.Empty(t, unsent(t, st))

	tasks, err := asynq.NewInspectorFromRedisClient(rd.Client).ListPendingTasks(rd.Queues.Events, asynq.PageSize(1000))
	require.NoError(t, err)
	require.Len(t, tasks, rows)
	seen := map[string]bool{}
	for _, task := range tasks {
		require.False(t, seen[task.ID], "task %s enqueued twice", task.ID)
		seen[task.ID] = true
	}
	for _, id := range ids {
		require.True(t, seen[id], id)
	}
}

func TestNudgeWakesAnIdleRelay(t *testing.T) {
	t.Parallel()
	st, rd := testkit.Schema(t), testkit.Redis(t)
	relay := outbox.NewRelay(st, rd.Client, rd.Prefix, rd.Queues.Events, quiet)
	relay.PollInterval = time.Hour
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); relay.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })

	// Wait until the relay has made its first (empty) pass and subscribed.
	require.Eventually(t, func() bool {
		n, err := rd.Client.PubSubNumSub(ctx, rd.Prefix+"outbox:wake").Result()
		return err == nil && n[rd.Prefix+"outbox:wake"] == 1
	}, 5*time.Second, 10*time.Millisecond)
	time.Sleep(100 * time.Millisecond)
	addRows(t, st, outbox.KindResumeEvent, 1)
	require.NoError(t, outbox.Nudge(ctx, rd.Client, rd.Prefix))
	require.Eventually(t, func() bool { return len(unsent(t, st)) == 0 }, 5*time.Second, 10*time.Millisecond,
		"an hour-long poll was cut short by the nudge")
}

func TestEnqueueFailureLeavesRowsUnsent(t *testing.T) {
	t.Parallel()
	st := testkit.Tx(t)
	addRows(t, st, outbox.KindResumeEvent, 2)
	down := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1", MaxRetries: -1, DialTimeout: 200 * time.Millisecond})
	t.Cleanup(func() { _ = down.Close() })
	relay := outbox.NewRelay(st, down, "tk:down:", "tk_down_events", quiet)

	n, err := relay.RunOnce(context.Background())
	require.Error(t, err)
	require.Zero(t, n)
	require.Len(t, unsent(t, st), 2)
}

func TestRelayOnSQLite(t *testing.T) {
	t.Parallel()
	st, rd := testkit.SQLite(t), testkit.Redis(t)
	ids := addRows(t, st, outbox.KindSummary, 3)
	relay := outbox.NewRelay(st, rd.Client, rd.Prefix, rd.Queues.Events, quiet)
	n, err := relay.RunOnce(context.Background())
	require.NoError(t, err)
	require.Equal(t, 3, n)
	require.Empty(t, unsent(t, st))
	info, err := asynq.NewInspectorFromRedisClient(rd.Client).GetTaskInfo(rd.Queues.Events, ids[0])
	require.NoError(t, err)
	require.Equal(t, jobs.Summary{}.Kind(), info.Type)
}
