package e2e_test

import (
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hibiken/asynq"
	"github.com/stretchr/testify/require"
)

// TestRunOutlivesAKilledWorker: a /run whose worker is killed with SIGKILL
// while the script runs. What the design promises (docs/operators.md#run-on-the-worker-fleet):
//   - the API still answers at the run's deadline, with 504: it waits on
//     its own clock, not on the worker (a deadline past the dead worker's
//     30 s lease would be answered 503 once the recoverer archives the
//     job, jobwait.ErrLost; this one is 8 s);
//   - the sandbox dies with its worker (bwrap --die-with-parent), so no
//     script outlives the process that ran it;
//   - the job is never run again: /run enqueues without retries, so when a
//     restarted worker's asynq recoverer finds the dead worker's lease
//     expired it archives the job instead of retrying it;
//   - nothing is recorded twice, nor half: a run's step, card and usage
//     commit in one transaction after the tool returned, so a worker killed
//     before that records nothing (killed after it, the one record stands
//     and the API still answers 504).
//
// The API runs in the test's process (its python deadline is the test's);
// the workers are `appruntime worker` processes.
func TestRunOutlivesAKilledWorker(t *testing.T) {
	t.Parallel()
	fs := newFaultStack(t)
	rs := newRunStackOn(t, fs.store, fs.redis, false)
	const deadline = 8 * time.Second
	rs.pythonDeadline.Store(int64(deadline))
	worker := fs.start(t, "worker")
	before := rs.counts(t)

	type answer struct {
		r    reply
		err  error
		took time.Duration
	}
	answered := make(chan answer, 1)
	start := time.Now()
	go func() {
		r, err := rs.send("POST", "/api/app-runtime/run", rs.token, map[string]any{"op": "sleep", "payload": map[string]any{}})
		answered <- answer{r, err, time.Since(start)}
	}()
	// The sleeper forks: two python processes under the worker's bwrap.
	var sandbox []int
	require.Eventually(t, func() bool {
		sandbox = descendants(worker.cmd.Process.Pid)
		return countComm(sandbox, "python") >= 2
	}, deadline/2, 20*time.Millisecond, "the script runs under the worker")

	worker.kill()
	require.Eventually(t, func() bool { return len(alive(sandbox)) == 0 }, 5*time.Second, 20*time.Millisecond,
		"the sandbox dies with its worker")

	select {
	case a := <-answered:
		require.NoError(t, a.err)
		require.Equal(t, 504, a.r.Status, string(a.r.Raw))
		require.GreaterOrEqual(t, a.took, deadline-100*time.Millisecond, "answered at the deadline, not before")
		require.Less(t, a.took, deadline+3*time.Second, "answered at the deadline")
	case <-time.After(deadline + 10*time.Second):
		t.Fatal("the API did not answer by the deadline")
	}

	// A restarted worker recovers the dead one's job: it is archived (lease
	// expired, no retries left), never run again.
	restarted := fs.start(t, "worker")
	inspector := asynq.NewInspectorFromRedisClient(fs.redis.Client)
	script := fs.redis.Queues.Script
	var archived []*asynq.TaskInfo
	require.Eventually(t, func() bool {
		active, err := inspector.ListActiveTasks(script)
		require.NoError(t, err)
		archived, err = inspector.ListArchivedTasks(script)
		require.NoError(t, err)
		return len(active) == 0 && len(archived) == 1
	}, recovery, 500*time.Millisecond, "the killed worker's job is recovered")
	require.Contains(t, archived[0].LastErr, "lease expired")
	require.Zero(t, archived[0].Retried, "the job ran once")
	require.Zero(t, countComm(descendants(restarted.cmd.Process.Pid), "python"), "no worker runs the script again")
	require.Equal(t, before, rs.counts(t), "the killed run recorded nothing")

	// The fleet serves runs again, and records each once.
	r := rs.run(t, "double", map[string]any{"x": 2})
	require.Equal(t, 200, r.Status, string(r.Raw))
	require.Equal(t, counts{before.steps + 1, before.cards + 1, before.usage}, rs.counts(t))
}

// countComm counts the processes of pids whose command name starts with
// prefix.
func countComm(pids []int, prefix string) int {
	n := 0
	for _, p := range pids {
		comm, err := os.ReadFile("/proc/" + strconv.Itoa(p) + "/comm")
		if err == nil && strings.HasPrefix(string(comm), prefix) {
			n++
		}
	}
	return n
}

// alive returns the processes of pids that still exist and are not zombies.
func alive(pids []int) []int {
	var out []int
	for _, p := range pids {
		stat, err := os.ReadFile("/proc/" + strconv.Itoa(p) + "/stat")
		if err != nil {
			continue
		}
		if i := strings.LastIndexByte(string(stat), ')'); i > 0 && strings.HasPrefix(strings.TrimSpace(string(stat[i+1:])), "Z") {
			continue
		}
		out = append(out, p)
	}
	return out
}
