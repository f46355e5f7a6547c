package api_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/appruntime/appruntime/internal/config"
	"github.com/appruntime/appruntime/internal/testkit"
	"github.com/appruntime/appruntime/models"
)

// countingTranslator is a LibreTranslate stand-in that counts how often
// it translated each text, so a test can tell that no /run ran twice.
type countingTranslator struct {
	mu    sync.Mutex
	times map[string]int
}

func newCountingTranslator(t *testing.T) (*countingTranslator, apiOption) {
	c := &countingTranslator{times: map[string]int{}}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var req struct {
			Q      []string `json:"q"`
			Target string   `json:"target"`
		}
		if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
			http.Error(w, `{"error":"bad request"}`, http.StatusBadRequest)
			return
		}
		out := make([]string, len(req.Q))
		c.mu.Lock()
		for i, q := range req.Q {
			c.times[q]++
			out[i] = "[" + req.Target + "] " + strings.ToUpper(q)
		}
		c.mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]any{"translatedText": out})
	}))
	t.Cleanup(srv.Close)
	return c, func(cfg *config.Config) { cfg.Tools.TranslateURL = srv.URL }
}

// ran is how many times text was translated.
func (c *countingTranslator) ran(text string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.times[text]
}

// allowTranslation turns document translation on for the fixture's agent,
// which its translate tool needs.
func (f *runtimeFixture) allowTranslation(t *testing.T) {
	t.Helper()
	require.NoError(t, f.db().Model(&models.Agent{}).Where("id = ?", f.tenant.Agent.ID).
		Update("document_translation_enabled", true).Error)
}

// run sends a /run of the fixture's translate tool for text.
func (f *runtimeFixture) run(t *testing.T, text string) response {
	t.Helper()
	return f.verb(t, "run", map[string]any{"op": "translate", "payload": map[string]any{"texts": []string{text}, "target_language": "de"}})
}

// TestRunOnARedisCluster is the operators' Cluster walk-through
// (docs/operators.md#redis-sentinel-and-cluster) in one process: a migrated
// schema, an API and a worker on REDIS_URL=redis-cluster://… of a
// three-master cluster, and /run of a tool that the worker answers (asynq
// on the cluster, jobwait's outcome back over its pub/sub), each run once;
// writes and approvals (the binding cache's acknowledged broadcast) go
// through too.
func TestRunOnARedisCluster(t *testing.T) {
	t.Parallel()
	engine, withEngine := newCountingTranslator(t)
	f := newRuntimeFixtureOn(t, testkit.ClusterRedis(t), withEngine)
	generousRate(f.api)
	f.allowTranslation(t)
	startWorker(t, f.api)

	for i := range 8 {
		text := fmt.Sprintf("hello %d", i)
		r := f.run(t, text)
		require.Equal(t, 200, r.Status, "%s", r.Raw)
		require.Contains(t, string(r.Raw), "[de] HELLO "+fmt.Sprint(i))
		require.Equal(t, 1, engine.ran(text), "run %d ran once", i)
	}
	r := f.verb(t, "write", map[string]any{"op": "record_decision", "payload": map[string]any{"row": map[string]any{"decision": "on-cluster"}}})
	require.Equal(t, 200, r.Status, "%s", r.Raw)
	r = f.api.call(t, "POST", "/api/app-runtime/action", f.token, approveBody("approved-on-cluster"))
	require.Equal(t, 200, r.Status, "%s", r.Raw)
}

// TestRunSurvivesAClusterFailover kills (SIGKILL) the master holding the
// /run queue's keys of a cluster whose masters each have a replica, while
// runs go on: every run is answered, with its result or a retryable
// refusal (502, 503 or 504) while the cluster elects the replica
// (cluster-node-timeout 2 s), runs succeed again on the new master, and
// none ran twice.
func TestRunSurvivesAClusterFailover(t *testing.T) {
	t.Parallel()
	cl := testkit.StartCluster(t, 1)
	client := cl.Client(t)
	rd := testkit.RedisOn(client)
	engine, withEngine := newCountingTranslator(t)
	f := newRuntimeFixtureOn(t, rd, withEngine)
	generousRate(f.api)
	f.allowTranslation(t)
	startWorker(t, f.api)
	r := f.run(t, "before the failover")
	require.Equal(t, 200, r.Status, "%s", r.Raw)

	cc, ok := client.(*redis.ClusterClient)
	require.True(t, ok, "a redis-cluster:// URL opens a cluster client")
	master, err := cc.MasterForKey(context.Background(), "asynq:{"+rd.Queues.Lookup+"}:pending")
	require.NoError(t, err)
	require.NoError(t, cl.Kill(master.Options().Addr))

	// Until the replica is elected and the clients learn the new slot map,
	// a run may be refused as retryable; it is never left unanswered or
	// answered otherwise.
	var refused []int
	recovered := false
	for i := 0; i < 60; i++ { // 200 × (a run's wait + 250 ms)
		text := fmt.Sprintf("during %d", i)
		r := f.run(t, text)
		if r.Status == 200 {
			require.Contains(t, string(r.Raw), "[de] DURING "+fmt.Sprint(i))
			recovered = true
			break
		}
		require.Contains(t, []int{502, 503, 504}, r.Status, "run %d: %s", i, r.Raw)
		require.LessOrEqual(t, engine.ran(text), 1, "run %d ran at most once", i)
		if len(refused) == 0 || i%20 == 0 {
			t.Logf("run %d refused: %s", i, r.Raw)
			for _, a := range cl.Nodes {
				c := redis.NewClient(&redis.Options{Addr: a})
				info, err := c.ClusterInfo(context.Background()).Result()
				_ = c.Close()
				if err == nil {
					t.Logf("%s: %s", a, strings.Join(strings.Fields(info)[:3], " "))
				}
			}
		}
		refused = append(refused, r.Status)
		time.Sleep(250 * time.Millisecond)
	}
	if !recovered {
		for _, a := range cl.Nodes {
			t.Logf("node %s:\n%s", a, cl.Log(a))
		}
	}
	require.True(t, recovered, "no run succeeded after the failover (refused: %v)", refused)
	t.Logf("runs refused while the replica took over: %v", refused)
	for i := range 5 {
		text := fmt.Sprintf("after %d", i)
		r := f.run(t, text)
		require.Equal(t, 200, r.Status, "%s", r.Raw)
		require.Equal(t, 1, engine.ran(text), "run %d ran once", i)
	}
}
