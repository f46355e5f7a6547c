package api_test

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/appruntime/appruntime/internal/testkit"
	"github.com/appruntime/appruntime/models"
)

// TestWritesAndApprovalsRideASentinelFailover: an API and a worker on a
// Redis under Sentinel serve a stream of /write, /action approvals and
// /run (a translate tool the worker answers) while the master is failed
// over (SENTINEL FAILOVER) or killed with SIGKILL. No process is
// restarted: after the window the stream goes on. Every refusal is a 503
// with Retry-After (a /run's enqueue that finds no master: seed 000's 502
// for a broker that cannot be reached, with Retry-After too; a /run whose job went with the
// master: a 503 within seconds, jobwait.ErrLost; one whose outcome went
// with it: that 503 once its task is gone or archived, or its 504 at the
// deadline), never a 500; every acknowledged write has its row and
// feed event, a refused one wrote nothing; every await is released exactly
// once (one resume event each), the refused approvals on their retry; every
// answered /run ran once and no /run ran twice (the translator counts).
// docs/operators.md#redis-sentinel-and-cluster
func TestWritesAndApprovalsRideASentinelFailover(t *testing.T) {
	const runDeadline = 8 * time.Second
	for _, how := range testkit.SentinelFaults {
		t.Run(how, func(t *testing.T) {
			t.Parallel()
			s := testkit.StartSentinel(t)
			ctx := context.Background()
			client := s.Client()
			engine, withEngine := newCountingTranslator(t)
			f := newRuntimeFixtureOn(t, testkit.RedisOn(client), withEngine)
			generousRate(f.api)
			// A /run whose outcome went with the old master, its task
			// still active on the new one, is answered when asynq's
			// recoverer archives the task (its lease expired: 30 to 90 s)
			// or at its deadline (60 s for a translation): either can be
			// past the window below. Runs are in flight at every moment (a
			// run waits up to asynq's 1 s poll), so on a loaded machine all
			// three runners can lose theirs at once; a short deadline ends
			// those waits within the window.
			f.api.P.Runtime.RunDeadlineFunc = func(string) time.Duration { return runDeadline }
			f.allowTranslation(t)
			startWorker(t, f.api)

			const approvals = 12
			type parked struct{ task, await, token string }
			steps := make([]parked, approvals)
			for i := range steps {
				task, step, await := f.parkedStep(t)
				steps[i] = parked{task, await, f.mint(t, step)}
			}

			var (
				mu       sync.Mutex
				acked    = map[string]bool{}
				statuses = map[int]int{}
				bad      []string
				lastFail time.Time
				approved = make([]bool, approvals)
				lastOK   = map[string]time.Time{}
				runsSent int
				runsOK   = map[string]bool{}
			)
			record := func(r response, what string) bool {
				mu.Lock()
				defer mu.Unlock()
				statuses[r.Status]++
				switch {
				case r.Status == 200:
					lastOK[what[:5]] = time.Now()
					return true
				case r.Status == 503 && r.Header.Get("Retry-After") != "":
					lastFail = time.Now()
				case r.Status == 502 && strings.HasPrefix(what, "runop") && strings.Contains(string(r.Raw), "the job queue cannot be reached") && r.Header.Get("Retry-After") != "":
					// Seed 000: a broker that cannot be reached is 502 (a
					// /run's enqueue while no master answers), told to
					// retry.
					lastFail = time.Now()
				case r.Status == 504 && strings.HasPrefix(what, "runop"):
					// A job enqueued on the master just before it went
					// may be lost with it (replication is asynchronous)
					// or picked up too late: its caller is told at its
					// deadline (seed 000's 504), never answered twice.
					lastFail = time.Now()
				default:
					bad = append(bad, fmt.Sprintf("%s: %d %s", what, r.Status, r.Raw))
				}
				return false
			}
			stop := make(chan struct{})
			var wg sync.WaitGroup
			// The stream stops before the fixture's cleanup, whichever way
			// the test ends.
			stopStream := sync.OnceFunc(func() { close(stop); wg.Wait() })
			defer stopStream()
			// Runs, each answered by the worker: three at a time, so that
			// some are in flight when the master goes.
			const runners = 3
			runStatuses := map[int]int{}
			wg.Add(2 + runners)
			for w := range runners {
				go func() {
					defer wg.Done()
					for i := w; ; i += runners {
						select {
						case <-stop:
							return
						default:
						}
						text := fmt.Sprintf("r-%d", i)
						r := f.run(t, text)
						mu.Lock()
						runsSent = max(runsSent, i+1)
						runStatuses[r.Status]++
						mu.Unlock()
						if record(r, "runop "+text) {
							mu.Lock()
							if strings.Contains(string(r.Raw), "[de] R-"+strconv.Itoa(i)) {
								runsOK[text] = true
							} else {
								bad = append(bad, fmt.Sprintf("run %s: %s", text, r.Raw))
							}
							mu.Unlock()
						}
						time.Sleep(20 * time.Millisecond)
					}
				}()
			}
			go func() { // writes
				defer wg.Done()
				for i := 0; ; i++ {
					select {
					case <-stop:
						return
					default:
					}
					d := fmt.Sprintf("w-%d", i)
					r := f.verb(t, "write", map[string]any{"op": "record_decision", "payload": map[string]any{"row": map[string]any{"decision": d}}})
					if record(r, "write "+d) {
						mu.Lock()
						acked[d] = true
						mu.Unlock()
					}
					time.Sleep(5 * time.Millisecond)
				}
			}()
			go func() { // approvals, each retried until it is acknowledged
				defer wg.Done()
				for i := range steps {
					for {
						select {
						case <-stop:
							return
						default:
						}
						r := f.api.call(t, "POST", "/api/app-runtime/action", steps[i].token, approveBody(fmt.Sprintf("a-%d", i)))
						if record(r, fmt.Sprintf("approve %d", i)) {
							mu.Lock()
							approved[i] = true
							mu.Unlock()
							break
						}
						time.Sleep(50 * time.Millisecond)
					}
					time.Sleep(400 * time.Millisecond)
				}
			}()
			time.Sleep(400 * time.Millisecond)
			start := time.Now()
			old := s.Fault(ctx, how)
			s.WaitNewMaster(ctx, old, 30*time.Second)
			switched := time.Now()
			// The stream goes on: no refusal for 1.5 s, every approval
			// acknowledged, a /run answered since the last refusal. Past
			// the window the failure says which part did not.
			for deadline := time.Now().Add(40 * time.Second); ; time.Sleep(50 * time.Millisecond) {
				mu.Lock()
				wentOn := time.Since(lastFail) > 1500*time.Millisecond && approved[approvals-1] && lastOK["runop"].After(lastFail)
				var state string
				if !wentOn && time.Now().After(deadline) {
					ago := func(at time.Time) string {
						if at.IsZero() {
							return "never"
						}
						return time.Since(at).Round(time.Millisecond).String() + " ago"
					}
					state = fmt.Sprintf("last refusal %s, last approval acknowledged %v, last /run answered %s, statuses %v, /run statuses %v, unexpected %q",
						ago(lastFail), approved[approvals-1], ago(lastOK["runop"]), statuses, runStatuses, bad)
				}
				mu.Unlock()
				if wentOn {
					break
				}
				if state != "" {
					t.Fatalf("the stream did not go on after the failover: %s", state)
				}
			}
			stopStream()

			mu.Lock()
			defer mu.Unlock()
			window := time.Duration(0)
			if !lastFail.IsZero() {
				window = lastFail.Sub(start)
			}
			t.Logf("%s: statuses %v, %d writes acknowledged, %d of %d runs answered (statuses %v); new master named %s after the fault; last 503 %s after the fault",
				how, statuses, len(acked), len(runsOK), runsSent, runStatuses, switched.Sub(start).Round(time.Millisecond), window.Round(time.Millisecond))
			require.True(t, lastOK["write"].After(switched) && lastOK["appro"].After(switched) && lastOK["runop"].After(switched),
				"writes, approvals and runs were acknowledged after the switch")
			require.Empty(t, bad, "refusals are 503 with Retry-After, never anything else")

			// Acknowledged writes are there; refused ones wrote nothing.
			var decisions []string
			require.NoError(t, f.source.DB.Raw("SELECT decision FROM decisions WHERE decision LIKE 'w-%'").Scan(&decisions).Error)
			got := map[string]bool{}
			for _, d := range decisions {
				require.False(t, got[d], "write %s applied twice", d)
				got[d] = true
			}
			require.Equal(t, acked, got, "exactly the acknowledged writes are in the data source")
			var feed int64
			require.NoError(t, f.db().Model(&models.FeedEvent{}).Where("task_id = ? AND type = ?", f.taskID, models.FeedAgentAction).Count(&feed).Error)
			require.Equal(t, int64(len(acked)), feed, "one feed row per acknowledged write")

			// Every answered run ran once; none ran twice.
			for i := range runsSent {
				text := fmt.Sprintf("r-%d", i)
				if runsOK[text] {
					require.Equal(t, 1, engine.ran(text), "answered run %s ran once", text)
				} else {
					require.LessOrEqual(t, engine.ran(text), 1, "refused run %s ran at most once", text)
				}
			}

			// Every await released once, with one resume event.
			for i, p := range steps {
				var aw models.TaskAwait
				require.NoError(t, f.db().Take(&aw, "id = ?", p.await).Error)
				require.Equal(t, models.AwaitResolved, aw.Status, "approval %d", i)
				var n int64
				require.NoError(t, f.source.DB.Raw("SELECT count(*) FROM decisions WHERE decision = ?", fmt.Sprintf("a-%d", i)).Scan(&n).Error)
				require.Equal(t, int64(1), n, "approval %d recorded once", i)
				require.NoError(t, f.db().Model(&models.Outbox{}).Where("payload::text LIKE ?", "%"+p.task+"%").Count(&n).Error)
				require.Equal(t, int64(1), n, "approval %d has one resume event", i)
			}
		})
	}
}
