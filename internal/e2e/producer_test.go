package e2e_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/hibiken/asynq"
	"github.com/stretchr/testify/require"

	"github.com/appruntime/appruntime/internal/bindingspec"
	"github.com/appruntime/appruntime/internal/config"
	"github.com/appruntime/appruntime/internal/datasource"
	"github.com/appruntime/appruntime/internal/outbox"
	"github.com/appruntime/appruntime/internal/store"
	"github.com/appruntime/appruntime/internal/testkit"
	"github.com/appruntime/appruntime/models"
)

// TestProducerSeedsRowsTheBundleReads: adding an app-tool step whose tool
// names a producer answers at once with the step still being built; a mint
// then is 409 with Retry-After; the producer (python under bwrap, on the
// script queue) seeds rows through the binding; the agent API and the feed
// show the artifact ready, and a /read returns the seeded rows. A producer
// that raises fails its step with its error.
// producers is a binding over a lines table (an insert-only write op, a
// read of the task's lines) on a data source of the test's own, whose
// configured tools seed it.
type producers struct {
	rs      *runStack
	source  *store.Store
	binding string // id
	bundle  string
}

// newProducers sets producers up on rs; dsnFunc, when given, rewrites the
// data source's DSN (to send it through a proxy).
func newProducers(t *testing.T, rs *runStack, dsnFunc func(string) string) *producers {
	t.Helper()
	ctx := context.Background()
	db := rs.Store.DB
	ws := rs.tenant.Workspace.ID
	source := testkit.DataSource(t)
	require.NoError(t, source.DB.Exec(`CREATE TABLE lines (id integer PRIMARY KEY, task_id text NOT NULL, label text NOT NULL)`).Error)
	dsn := testkit.URLOf(source)
	if dsnFunc != nil {
		dsn = dsnFunc(dsn)
	}
	secrets, err := rs.P.Secrets.SealJSON(datasource.Secrets{DSN: dsn})
	require.NoError(t, err)
	integ := models.Integration{ID: models.NewID(), WorkspaceID: ws, Name: "lines", Kind: "postgres", SecretsEnc: secrets}
	require.NoError(t, db.Create(&integ).Error)
	spec, err := json.Marshal(bindingspec.Spec{
		Reads: []bindingspec.Read{{Op: "list_lines", Table: "lines", Columns: []string{"id", "label"},
			FixedFilters: map[string]any{"task_id": "{{task_id}}"}, OrderBy: []bindingspec.Order{{Column: "id"}}, Limit: 50}},
		Writes: []bindingspec.Write{{Op: "add_line", Table: "lines", Mode: bindingspec.ModeInsert, Columns: []string{"id", "label"},
			FixedValues: map[string]any{"task_id": "{{task_id}}"}}},
	})
	require.NoError(t, err)
	b, err := rs.P.Bindings.Create(ctx, ws, "test", bindingspec.Input{Name: "lines", BindingKind: bindingspec.KindPostgres, IntegrationID: integ.ID, AllowedOperations: spec})
	require.NoError(t, err)
	bundleID := models.NewID()
	require.NoError(t, db.Create(&models.Bundle{ID: bundleID, Version: 1, WorkspaceID: ws, Name: "lines", SHA256: "00", ContentType: "text/html", Size: 1, StorageKey: "k"}).Error)
	return &producers{rs: rs, source: source, binding: b.ID, bundle: bundleID}
}

// newApp adds an app tool on the binding whose producer runs code.
func (p *producers) newApp(t *testing.T, code string) string {
	t.Helper()
	db, ws, agent := p.rs.Store.DB, p.rs.tenant.Workspace.ID, p.rs.tenant.Agent.ID
	producer := models.ConfiguredTool{ID: models.NewID(), WorkspaceID: ws, AgentID: agent, DisplayName: "producer " + models.NewID(),
		BaseTool: models.BasePythonCode, Config: models.MustJSON(map[string]any{"code": code})}
	require.NoError(t, db.Create(&producer).Error)
	app := models.ConfiguredTool{ID: models.NewID(), WorkspaceID: ws, AgentID: agent, DisplayName: "lines " + producer.ID,
		BaseTool: models.BaseAppTool, BundleID: &p.bundle, BindingID: &p.binding, ProducerToolID: &producer.ID}
	require.NoError(t, db.Create(&app).Error)
	return app.ID
}

// newTask adds a running task of the tenant's agent.
func (p *producers) newTask(t *testing.T) string {
	t.Helper()
	task := models.Task{ID: models.NewID(), WorkspaceID: p.rs.tenant.Workspace.ID, AgentID: p.rs.tenant.Agent.ID, Status: models.TaskRunning}
	require.NoError(t, p.rs.Store.DB.Create(&task).Error)
	return task.ID
}

// waitStep waits, up to within, for the step to leave running, as the agent
// API shows it.
func (p *producers) waitStep(t *testing.T, taskID, stepID string, within time.Duration) map[string]any {
	t.Helper()
	var step map[string]any
	require.Eventually(t, func() bool {
		task := p.rs.must(t, 200, "GET", "/api/agent/tasks/"+taskID, p.rs.tenant.AgentToken, nil)
		for _, s := range task["steps"].([]any) {
			if s.(map[string]any)["id"] == stepID {
				step = s.(map[string]any)
			}
		}
		return step != nil && step["status"] != models.StepRunning
	}, within, 50*time.Millisecond)
	return step
}

func TestProducerSeedsRowsTheBundleReads(t *testing.T) {
	t.Parallel()
	rs := newRunStack(t)
	db := rs.Store.DB
	p := newProducers(t, rs, nil)
	newApp := func(code string) string { return p.newApp(t, code) }
	newTask := func() string { return p.newTask(t) }
	waitStep := func(taskID, stepID string) map[string]any { return p.waitStep(t, taskID, stepID, 60*time.Second) }

	seeding := newApp("import time\ndef main(input):\n    time.sleep(1)\n    return {'writes': [{'op': 'add_line', 'row': {'id': i, 'label': 'line %d of report %d' % (i, input['report_id'])}} for i in range(1, 4)]}\n")
	taskID := newTask()
	step := rs.must(t, 201, "POST", "/api/agent/tasks/"+taskID+"/steps", rs.tenant.AgentToken,
		map[string]any{"configured_tool_id": seeding, "params": map[string]any{"report_id": 7}})
	require.Equal(t, models.StepRunning, step["status"], "the call returns with the step still being built")
	stepID := step["id"].(string)
	r := rs.call(t, "POST", "/api/app-tools/sessions", rs.tenant.HostToken, map[string]any{"step_id": stepID})
	require.Equal(t, 409, r.Status, string(r.Raw))
	require.Equal(t, "2", r.Header.Get("Retry-After"))

	require.Equal(t, models.StepCompleted, waitStep(taskID, stepID)["status"])
	var ready int64
	require.NoError(t, db.Model(&models.FeedEvent{}).Where("task_id = ? AND step_id = ? AND type = ?", taskID, stepID, "artifact_ready").Count(&ready).Error)
	require.Equal(t, int64(1), ready, "the feed shows the artifact ready")
	d := rs.must(t, 201, "POST", "/api/app-tools/sessions", rs.tenant.HostToken, map[string]any{"step_id": stepID})
	read := rs.call(t, "POST", "/api/app-runtime/read", d["session_token"].(string), map[string]any{"op": "list_lines"})
	require.Equal(t, 200, read.Status, string(read.Raw))
	require.Equal(t, []any{
		[]any{float64(1), "line 1 of report 7"}, []any{float64(2), "line 2 of report 7"}, []any{float64(3), "line 3 of report 7"},
	}, read.Body["rows"], "the bundle reads the seeded rows")

	raising := newApp("def main(input):\n    raise ValueError('report 7 has no lines')\n")
	taskID = newTask()
	step = rs.must(t, 201, "POST", "/api/agent/tasks/"+taskID+"/steps", rs.tenant.AgentToken, map[string]any{"configured_tool_id": raising})
	failed := waitStep(taskID, step["id"].(string))
	require.Equal(t, models.StepFailed, failed["status"])
	require.Contains(t, failed["error"], "report 7 has no lines")
	r = rs.call(t, "POST", "/api/app-tools/sessions", rs.tenant.HostToken, map[string]any{"step_id": step["id"]})
	require.Equal(t, 409, r.Status, string(r.Raw))
	require.Empty(t, r.Header.Get("Retry-After"))
}

// TestProducerRetriedSeedsOnce: a producer whose first attempt fails on
// the way to its data source is retried by asynq with its real backoff and
// completes its step once: its rows written once (its op is insert-only, so
// a second write would fail on their keys), one app_tool_run step, one
// artifact_ready card, nothing billed twice (python bills nothing), and the
// seeding journal gone. The data source sits behind a loopback proxy that
// fails once:
//   - refusing the first connection: nothing was written, the retry seeds;
//   - cutting the connection that carries the first COMMIT after passing
//     it on (a worker crash between the data-source commit and settling
//     looks the same to the next attempt): the rows are written but the
//     answer is lost, and the retry finds the journaled transaction
//     committed and seeds nothing again.
func TestProducerRetriedSeedsOnce(t *testing.T) {
	t.Parallel()
	for _, mode := range []testkit.PGFault{testkit.RefuseFirstConnection, testkit.LoseFirstCommitAnswer} {
		t.Run(string(mode), func(t *testing.T) {
			t.Parallel()
			rs := newRunStack(t)
			proxy := testkit.NewPGProxy(t, mode)
			p := newProducers(t, rs, proxy.Rewrite)
			app := p.newApp(t, "def main(input):\n    return {'writes': [{'op': 'add_line', 'row': {'id': i, 'label': 'line %d' % i}} for i in range(1, 4)]}\n")
			taskID := p.newTask(t)
			step := rs.must(t, 201, "POST", "/api/agent/tasks/"+taskID+"/steps", rs.tenant.AgentToken, map[string]any{"configured_tool_id": app})
			stepID := step["id"].(string)

			// asynq's first retry waits 15 to 45 s.
			settled := p.waitStep(t, taskID, stepID, 120*time.Second)
			require.Equal(t, models.StepCompleted, settled["status"], "%v", settled["error"])
			require.Equal(t, 1, proxy.Failed(), "the first attempt failed")
			completed, err := asynq.NewInspectorFromRedisClient(rs.Redis.Client).ListCompletedTasks(rs.Redis.Queues.Script)
			require.NoError(t, err)
			require.Len(t, completed, 1)
			require.Equal(t, 1, completed[0].Retried, "the producer ran twice")

			p.requireSeededOnce(t, taskID, stepID)
			count := p.counter(t)
			require.EqualValues(t, 0, count(&models.FeedEvent{}, "step_id = ? AND type = ?", stepID, "artifact_failed"))
			require.EqualValues(t, 0, count(&models.UsageRecord{}, "task_id = ?", taskID), "python bills nothing, once")
			require.EqualValues(t, 0, count(&models.ProducerSeed{}, "step_id = ?", stepID), "the settled step's journal is gone")
		})
	}
}

// counter counts rows of a model on the platform's database.
func (p *producers) counter(t *testing.T) func(model any, where string, args ...any) int64 {
	return func(model any, where string, args ...any) int64 {
		t.Helper()
		var n int64
		require.NoError(t, p.rs.Store.DB.Model(model).Where(where, args...).Count(&n).Error)
		return n
	}
}

// requireSeededOnce checks that the producer of step wrote its three
// lines once, recorded one run and posted one ready card.
func (p *producers) requireSeededOnce(t *testing.T, taskID, stepID string) {
	t.Helper()
	var lines int64
	require.NoError(t, p.source.DB.Raw(`SELECT count(*) FROM lines WHERE task_id = ?`, taskID).Scan(&lines).Error)
	require.EqualValues(t, 3, lines, "the rows are written once")
	count := p.counter(t)
	require.EqualValues(t, 1, count(&models.Step{}, "parent_step_id = ? AND kind = ?", stepID, models.StepAppToolRun), "one producer run is recorded")
	require.EqualValues(t, 1, count(&models.FeedEvent{}, "step_id = ? AND type = ?", stepID, "artifact_ready"), "one ready card")
}

// TestAProducerQueuedWhenRedisIsFlushedRunsOnce: a producer relayed to
// Redis and waiting in the script queue (paused, so that no worker takes
// it) is lost with FLUSHALL; within a sweep interval the worker re-creates
// it from its outbox row, and it seeds its rows once and completes its
// step once (issue 27 §1, docs/architecture.md#12-postgres-records-redis-carries).
func TestAProducerQueuedWhenRedisIsFlushedRunsOnce(t *testing.T) {
	t.Parallel()
	own := testkit.StartRedis(t)
	rd := testkit.RedisOn(own.Client())
	rs := newRunStackOn(t, testkit.Schema(t), rd, true, func(c *config.Config) { c.SweepInterval = time.Second })
	db := rs.Store.DB
	p := newProducers(t, rs, nil)
	app := p.newApp(t, "def main(input):\n    return {'writes': [{'op': 'add_line', 'row': {'id': i, 'label': 'line %d' % i}} for i in range(1, 4)]}\n")
	inspector := asynq.NewInspectorFromRedisClient(rd.Client)
	require.NoError(t, inspector.PauseQueue(rd.Queues.Script))

	taskID := p.newTask(t)
	step := rs.must(t, 201, "POST", "/api/agent/tasks/"+taskID+"/steps", rs.tenant.AgentToken, map[string]any{"configured_tool_id": app})
	stepID := step["id"].(string)
	require.Eventually(t, func() bool {
		pending, err := inspector.ListPendingTasks(rd.Queues.Script)
		return err == nil && len(pending) == 1
	}, 20*time.Second, 50*time.Millisecond, "the producer waits in the paused script queue")
	// The relay marks the row sent in the transaction that enqueued it,
	// so the job can be seen in the queue a moment before the mark.
	var row models.Outbox
	require.Eventually(t, func() bool {
		row = models.Outbox{}
		err := db.Where("kind = ? AND payload::text LIKE ?", outbox.KindProducer, "%"+stepID+"%").Take(&row).Error
		return err == nil && row.SentAt != nil
	}, 10*time.Second, 20*time.Millisecond, "relayed")
	require.Nil(t, row.DoneAt)

	own.FlushAll() // the job and the queue's pause are gone
	settled := p.waitStep(t, taskID, stepID, 60*time.Second)
	require.Equal(t, models.StepCompleted, settled["status"], "%v", settled["error"])

	time.Sleep(3 * time.Second) // more sweeps: nothing twice
	p.requireSeededOnce(t, taskID, stepID)
	require.NoError(t, db.Where("id = ?", row.ID).Take(&row).Error)
	require.NotNil(t, row.DoneAt, "the producer's outbox row is done")
}
