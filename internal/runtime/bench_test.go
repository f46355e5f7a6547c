package runtime_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	goruntime "runtime"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/appruntime/appruntime/internal/bindingspec"
	"github.com/appruntime/appruntime/internal/datasource"
	"github.com/appruntime/appruntime/internal/limit"
	"github.com/appruntime/appruntime/internal/logging"
	"github.com/appruntime/appruntime/internal/platform"
	"github.com/appruntime/appruntime/internal/requestid"
	"github.com/appruntime/appruntime/internal/session"
	"github.com/appruntime/appruntime/internal/testkit"
	"github.com/appruntime/appruntime/models"
)

// The verbs' benchmarks run what scripts/bench measures, without HTTP in
// front: /read of a one-row op and /write of one row on a real Postgres
// data source, and a lookup of a loopback upstream through the real
// gateway, on the platform a process builds. Besides ns/op (wall time per
// call, concurrent callers) and allocations they report cpu-µs/op, the
// process's CPU time per call, which is what a change to the hot path
// moves even on a busy machine.

// benchVerbs is a platform with a bound session over a 1,000-row table and
// an upstream.
type benchVerbs struct {
	p      *platform.Platform
	claims session.Claims
}

const benchRows = 1000

func newBenchVerbs(b testing.TB) *benchVerbs {
	b.Helper()
	ctx := context.Background()
	st := testkit.Schema(b)
	rd := testkit.Redis(b)
	p, err := platform.New(ctx, platform.Options{
		Config: testkit.Config(testkit.DatabaseURL(), testkit.RedisURL()), Log: logging.New(io.Discard, slog.LevelError),
		Store: st, Redis: rd.Client, KeyPrefix: rd.Prefix, Queues: rd.Queues,
	})
	require.NoError(b, err)
	b.Cleanup(p.Close)
	p.Limiter.SetRate(limit.Rate{PerSecond: 1e9, Burst: 1e9})

	upstream := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = fmt.Fprintf(w, `{"id":%q,"in_stock":true}`, r.URL.Path)
	}))
	b.Cleanup(upstream.Close)

	data := testkit.DataSource(b)
	require.NoError(b, data.DB.Exec(`CREATE TABLE items (id integer PRIMARY KEY, name text NOT NULL, n integer NOT NULL)`).Error)
	require.NoError(b, data.DB.Exec(`INSERT INTO items SELECT g, 'item ' || g, 0 FROM generate_series(1, ?) g`, benchRows).Error)
	tn := testkit.NewTenant(b, st.DB)
	secrets, err := p.Secrets.SealJSON(datasource.Secrets{DSN: testkit.URLOf(data)})
	require.NoError(b, err)
	integ := models.Integration{ID: models.NewID(), WorkspaceID: tn.Workspace.ID, Name: "items", Kind: datasource.KindPostgres, SecretsEnc: secrets}
	require.NoError(b, st.DB.Create(&integ).Error)
	spec, err := json.Marshal(bindingspec.Spec{
		Reads:     []bindingspec.Read{{Op: "get_item", Table: "items", Columns: []string{"id", "name", "n"}, Filterable: []string{"id"}, Limit: 1}},
		Writes:    []bindingspec.Write{{Op: "set_n", Table: "items", Mode: bindingspec.ModeUpdate, KeyColumns: []string{"id"}, Columns: []string{"n"}}},
		HTTPCalls: []bindingspec.HTTPCall{{Op: "lookup_item", Method: "GET", URL: upstream.URL + "/items/{{id}}"}},
	})
	require.NoError(b, err)
	bd, err := p.Bindings.Create(ctx, tn.Workspace.ID, "bench", bindingspec.Input{
		Name: "items", BindingKind: bindingspec.KindPostgres, IntegrationID: integ.ID, AllowedOperations: spec,
	})
	require.NoError(b, err)
	task := models.Task{ID: models.NewID(), WorkspaceID: tn.Workspace.ID, AgentID: tn.Agent.ID, Status: models.TaskRunning}
	require.NoError(b, st.DB.Create(&task).Error)
	step := models.Step{ID: models.NewID(), TaskID: task.ID, Kind: models.StepAppTool, Status: models.StepCompleted}
	require.NoError(b, st.DB.Create(&step).Error)
	return &benchVerbs{p: p, claims: session.Claims{SessionID: models.NewID(), WorkspaceID: task.WorkspaceID, TaskID: task.ID,
		AgentID: task.AgentID, StepID: step.ID, BindingID: bd.ID, ExpiresAt: time.Now().Add(time.Hour)}}
}

// benchContext is a request's context as the api gives it to a verb: it
// carries the request's id, which a lookup passes on upstream.
func benchContext() context.Context { return requestid.With(context.Background(), "bench-request-1") }

// run calls verb from 64 goroutines (the bench's connections) with a body
// per call, and reports the process's CPU time per call.
func (v *benchVerbs) run(b *testing.B, verb func(context.Context, session.Claims, []byte) (any, error), body func(i int) []byte) {
	b.Helper()
	ctx := benchContext()
	for i := range 50 { // warm the caches and the pools
		_, err := verb(ctx, v.claims, body(i))
		require.NoError(b, err)
	}
	var n atomic.Int64
	b.SetParallelism(max(1, 64/goruntime.GOMAXPROCS(0))) // the bench's 64 connections
	b.ReportAllocs()
	cpu0 := cpuTime()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if _, err := verb(ctx, v.claims, body(int(n.Add(1)))); err != nil {
				b.Error(err)
				return
			}
		}
	})
	b.StopTimer()
	b.ReportMetric(float64((cpuTime()-cpu0).Microseconds())/float64(b.N), "cpu-µs/op")
}

func cpuTime() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func BenchmarkWrite(b *testing.B) {
	v := newBenchVerbs(b)
	v.run(b, func(ctx context.Context, c session.Claims, body []byte) (any, error) {
		return v.p.Runtime.Write(ctx, c, body)
	},
		func(i int) []byte {
			return fmt.Appendf(nil, `{"op":"set_n","payload":{"row":{"id":%d,"n":%d}}}`, 1+i%benchRows, i%1000)
		})
}

func BenchmarkRead(b *testing.B) {
	v := newBenchVerbs(b)
	v.run(b, func(ctx context.Context, c session.Claims, body []byte) (any, error) {
		return v.p.Runtime.Read(ctx, c, body)
	},
		func(i int) []byte {
			return fmt.Appendf(nil, `{"op":"get_item","payload":{"filters":{"id":%d}}}`, 1+i%benchRows)
		})
}

func BenchmarkLookup(b *testing.B) {
	v := newBenchVerbs(b)
	v.run(b, func(ctx context.Context, c session.Claims, body []byte) (any, error) {
		return v.p.Runtime.Read(ctx, c, body)
	},
		func(i int) []byte { return fmt.Appendf(nil, `{"op":"lookup_item","payload":{"id":%d}}`, 1+i%benchRows) })
}
