package rdb_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/appruntime/appruntime/internal/apperr"
	"github.com/appruntime/appruntime/internal/rdb"
	"github.com/appruntime/appruntime/internal/testkit"
)

// TestSentinelFailoverKeepsTheClientAndEveryAcknowledgedWrite: writes
// stream through one client opened on a redis-sentinel:// URL while the
// master is failed over (SENTINEL FAILOVER) or killed with SIGKILL. The
// client goes on against the new master with no reopening, every write it
// acknowledged once the window closed is there, and each refusal in the
// window is apperr.Unavailable (a 503 with Retry-After), never anything
// else. Redis replicates asynchronously, so a write the old master
// acknowledged in the window may be lost (min-replicas-to-write narrows
// that, it does not close it); the platform does not count on those:
// Postgres is the record of what is owed (docs/operators.md#redis-sentinel-and-cluster).
func TestSentinelFailoverKeepsTheClientAndWritesAfterTheWindow(t *testing.T) {
	for _, how := range testkit.SentinelFaults {
		t.Run(how, func(t *testing.T) {
			t.Parallel()
			s := testkit.StartSentinel(t)
			ctx := context.Background()
			client := s.Client()

			var (
				mu       sync.Mutex
				acked    []string
				refused  int
				wrong    []error
				lastFail time.Time
			)
			stop := make(chan struct{})
			done := make(chan struct{})
			go func() {
				defer close(done)
				for i := 0; ; i++ {
					select {
					case <-stop:
						return
					default:
					}
					key := fmt.Sprintf("w:%d", i)
					cctx, cancel := context.WithTimeout(ctx, 3*time.Second)
					err := client.Set(cctx, key, i, 0).Err()
					cancel()
					mu.Lock()
					switch {
					case err == nil:
						acked = append(acked, key)
					case apperr.Is(err, apperr.Unavailable):
						refused++
						lastFail = time.Now()
					default:
						wrong = append(wrong, err)
					}
					mu.Unlock()
					time.Sleep(2 * time.Millisecond)
				}
			}()
			time.Sleep(300 * time.Millisecond)
			start := time.Now()
			old := s.Fault(ctx, how)
			newMaster := s.WaitNewMaster(ctx, old, 30*time.Second)
			// The stream must resume: acknowledged writes after the switch.
			require.Eventually(t, func() bool {
				mu.Lock()
				defer mu.Unlock()
				return len(acked) > 0 && time.Since(lastFail) > time.Second
			}, 30*time.Second, 50*time.Millisecond, "writes did not resume after the failover")
			mu.Lock()
			before := len(acked)
			mu.Unlock()
			time.Sleep(300 * time.Millisecond)
			close(stop)
			<-done
			require.Greater(t, len(acked), before, "the client writes on after the window")
			require.Empty(t, wrong, "every refusal in the window is Unavailable")
			window := lastFail.Sub(start)
			if lastFail.IsZero() {
				window = 0
			}
			t.Logf("%s: old master %s, new %s; %d writes acknowledged, %d refused as Unavailable; refusals ended %s after the fault",
				how, old, newMaster, len(acked), refused, window.Round(time.Millisecond))

			// Every write acknowledged after the window is on the new master,
			// asked directly; those of the window are counted, not required.
			direct := redis.NewClient(&redis.Options{Addr: newMaster})
			t.Cleanup(func() { _ = direct.Close() })
			role, err := direct.Do(ctx, "ROLE").Slice()
			require.NoError(t, err)
			require.Equal(t, "master", role[0])
			after, err := direct.Exists(ctx, acked[before:]...).Result()
			require.NoError(t, err)
			require.Equal(t, int64(len(acked)-before), after, "a write acknowledged after the window was lost")
			kept, err := direct.Exists(ctx, acked[:before]...).Result()
			require.NoError(t, err)
			t.Logf("%s: %d of the %d writes acknowledged up to the window's end kept", how, kept, before)
		})
	}
}

func TestIsUnavailableClassifiesFailoverReplies(t *testing.T) {
	t.Parallel()
	for _, msg := range []string{"READONLY You can't write against a read only replica.", "LOADING Redis is loading the dataset in memory",
		"MASTERDOWN Link with MASTER is down", "CLUSTERDOWN The cluster is down", "TRYAGAIN Multiple keys request during rehashing of slot",
		"MOVED 3999 127.0.0.1:6381", "ASK 3999 127.0.0.1:6381", "redis: cluster has no nodes"} {
		require.True(t, rdb.IsUnavailable(fmt.Errorf("%s", msg)), msg)
	}
	for _, msg := range []string{"ERR wrong number of arguments", "WRONGTYPE Operation against a key holding the wrong kind of value"} {
		require.False(t, rdb.IsUnavailable(fmt.Errorf("%s", msg)), msg)
	}
	require.False(t, rdb.IsUnavailable(context.DeadlineExceeded))
}
