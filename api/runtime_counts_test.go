package api_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/appruntime/appruntime/internal/bindingspec"
	"github.com/appruntime/appruntime/internal/rdb"
	"github.com/appruntime/appruntime/internal/store"
	"github.com/appruntime/appruntime/internal/testkit"
)

// verbCost is what one runtime request costs in steady state, counted.
type verbCost struct {
	PlatformStatements   float64 // statements on the platform's Postgres
	PlatformTransactions float64 // explicit transactions there
	SourceStatements     float64 // statements on the binding's data source
	SourceTransactions   float64
	RedisCommands        float64
}

// countedCosts are the counted costs of each runtime verb in steady state:
// the reference of docs/performance.md#counted-costs. A change that moves
// one changes the table there and says why.
var countedCosts = map[string]verbCost{
	// A row op's read is its one data-source statement: the session, the
	// binding and the limiter cost nothing (cached, and reads are not
	// rate-limited).
	"read": {SourceStatements: 1},
	// A lone write: the journal's open (waited for), then on the settle
	// writer the completion and the batch row's delete; and the data-source
	// statement. On a busy api the settle writer shares its statements among
	// the writes queued together, so this is the most a write costs.
	"write": {PlatformStatements: 3, SourceStatements: 1},
	// The limiter reserves a lease in Redis (one EVALSHA) and spends it
	// locally; the leases double while they are used up (1, 2, then 4, 8
	// and 16 over the counted calls 4 to 23): 3 round trips over 20
	// lookups, none on the other 17. The upstream call is not counted here.
	"lookup": {RedisCommands: 3.0 / 20},
	// The limiter's lease (the lookups' last one still holds 7 tokens: the
	// warm-up spends 3, the counted calls 4 more, then one reservation of
	// 32), the journal's open and feed rows in one platform transaction,
	// and the data source's own transaction (BEGIN, the insert, COMMIT).
	"action": {PlatformStatements: 8, PlatformTransactions: 1, SourceStatements: 3, SourceTransactions: 1, RedisCommands: 1.0 / 20},
	// A host's POST /api/review/next that claims a task: the reviewer's
	// advisory lock and the claim as one pgx batch (one round trip, no
	// BEGIN), the host token from its cache, and no Redis command (the
	// worker's sweep clears an expired claim; no job per claim).
	"review_next": {PlatformStatements: 2},
}

// Each runtime verb costs, in steady state, a pinned number of statements on
// the platform's Postgres and on the data source and of Redis commands per
// request: a change that adds a round trip fails here. Counted, not timed:
// every Postgres connection of the platform and of the integration goes
// through a counting proxy of the test's own, and the platform's Redis
// client is a client of the test's own with a counting hook, so the tests
// running beside this one on the shared servers are not counted (the
// servers' pg_stat_statements and INFO commandstats are server-wide).
func TestEachVerbCostsItsCountedRoundTrips(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	platformPG, sourcePG := testkit.NewPGCounter(t), testkit.NewPGCounter(t)
	schema := testkit.Schema(t)
	st, err := store.Open(ctx, platformPG.Rewrite(testkit.URLOf(schema)), store.Options{MaxOpenConns: 8})
	require.NoError(t, err)
	t.Cleanup(func() { _ = st.Close() })
	rd := testkit.Redis(t) // its prefix, queues and cleanup; the platform gets a client of its own
	client, err := rdb.Open(ctx, testkit.RedisURL())
	require.NoError(t, err)
	t.Cleanup(func() { _ = client.Close() })
	redisCount := testkit.CountRedis(client)
	rd.Client = client

	upstream := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"id":"A-1"}`))
	}))
	t.Cleanup(upstream.Close)
	f := newRuntimeFixtureWith(t, st, rd, sourcePG.Rewrite)
	generousRate(f.api)
	// The surface's leases outlive the slowest request under -race, so the
	// count does not depend on the machine's speed (at the default
	// limit.LeaseTTL a lease expires after 500 ms: a surface that calls
	// less often than that asks Redis on every call).
	f.api.P.Limiter.SetLeaseTTL(time.Minute)
	spec := fixtureSpec()
	spec.HTTPCalls = []bindingspec.HTTPCall{{Op: "lookup_item", Method: "GET", URL: upstream.URL + "/items/{{id}}"}}
	f.saveSpec(t, spec)

	bodies := map[string]func(i int) (string, map[string]any){
		"read": func(int) (string, map[string]any) { return "read", map[string]any{"op": "list_invoices"} },
		"write": func(i int) (string, map[string]any) {
			return "write", map[string]any{"op": "set_status", "payload": map[string]any{"row": map[string]any{"id": 2, "status": fmt.Sprint("s", i)}}}
		},
		"lookup": func(i int) (string, map[string]any) {
			return "read", map[string]any{"op": "lookup_item", "payload": map[string]any{"id": fmt.Sprint(i)}}
		},
		"action": func(i int) (string, map[string]any) {
			return "action", map[string]any{"op": "note_only", "payload": map[string]any{"rows": map[string]any{"record_decision": map[string]any{"decision": fmt.Sprint("d", i)}}}}
		},
	}
	const warmup, n = 3, 20
	got := map[string]verbCost{}
	ran := map[string][]string{} // the platform statements of one request
	for _, name := range []string{"read", "write", "lookup", "action"} {
		call := func(i int) {
			verb, body := bodies[name](i)
			r := f.verb(t, verb, body)
			require.Equal(t, 200, r.Status, "%s: %s", name, r.Raw)
			// The completion a /write queues is settled after its answer,
			// with whatever else is queued by then: waiting for it makes
			// each write a lone one, whose count does not depend on timing
			// (an empty queue's Flush costs no statement).
			require.NoError(t, f.api.P.Runtime.Journal.Flush(ctx))
		}
		for i := range warmup {
			call(i)
		}
		p0, s0, r0, own0 := platformPG.Count(), sourcePG.Count(), redisCount.Commands(), st.Counted()
		phase := len(platformPG.Statements(0))
		for i := range n {
			call(warmup + i)
		}
		p, s, r, own := platformPG.Count().Sub(p0), sourcePG.Count().Sub(s0), redisCount.Commands()-r0, st.Counted()
		// The binding cache re-reads a binding at most every
		// binding.MaxStaleness (5 s), whatever the rate of requests: a
		// phase that a loaded machine stretches across that moment sees
		// the re-read, which is not a cost of each request.
		var reloads int64
		for _, sql := range platformPG.Statements(phase) {
			if strings.Contains(sql, `FROM "bindings"`) {
				reloads++
			}
		}
		// The platform's own count (appruntime_platform_db_statements_total,
		// what scripts/bench reads) is what the server was sent.
		require.Equal(t, [2]uint64{uint64(p.Statements), uint64(p.Transactions)},
			[2]uint64{own.Statements - own0.Statements, own.Transactions - own0.Transactions}, "%s: the store's own statement count", name)
		// One more request, not counted, says what a request's statements are.
		from := len(platformPG.Statements(0))
		call(warmup + n)
		for _, sql := range platformPG.Statements(from) {
			if sql = strings.Join(strings.Fields(sql), " "); len(sql) > 140 {
				sql = sql[:140] + "…"
			}
			ran[name] = append(ran[name], sql)
		}
		got[name] = verbCost{
			PlatformStatements: float64(p.Statements-reloads) / n, PlatformTransactions: float64(p.Transactions) / n,
			SourceStatements: float64(s.Statements) / n, SourceTransactions: float64(s.Transactions) / n,
			RedisCommands: float64(r) / n,
		}
		t.Logf("%-6s platform statements %.2f (transactions %.2f), data-source statements %.2f (transactions %.2f), Redis commands %.2f per request; pings %d+%d, binding re-reads %d over %d",
			name, got[name].PlatformStatements, got[name].PlatformTransactions, got[name].SourceStatements, got[name].SourceTransactions, got[name].RedisCommands, p.Pings, s.Pings, reloads, n)
	}
	// review/next, each claim put back after it is counted: the abort is
	// not part of the claim's cost.
	_, host := f.reviewer(t, "counted")
	var p, s testkit.PGCount
	var r int64
	for i := range warmup + n {
		p0, s0, r0 := platformPG.Count(), sourcePG.Count(), redisCount.Commands()
		from := len(platformPG.Statements(0))
		require.Equal(t, f.taskID, f.next(t, host))
		if i >= warmup {
			p, s, r = p.Add(platformPG.Count().Sub(p0)), s.Add(sourcePG.Count().Sub(s0)), r+redisCount.Commands()-r0
			ran["review_next"] = ran["review_next"][:0]
			for _, sql := range platformPG.Statements(from) {
				ran["review_next"] = append(ran["review_next"], strings.Join(strings.Fields(sql), " "))
			}
		}
		ab := f.api.call(t, "POST", "/api/review/tasks/"+f.taskID+"/abort", host, nil)
		require.Equal(t, 200, ab.Status, string(ab.Raw))
	}
	got["review_next"] = verbCost{
		PlatformStatements: float64(p.Statements) / n, PlatformTransactions: float64(p.Transactions) / n,
		SourceStatements: float64(s.Statements) / n, SourceTransactions: float64(s.Transactions) / n,
		RedisCommands: float64(r) / n,
	}
	for _, name := range []string{"write", "action", "review_next"} {
		t.Logf("%s: one request's platform statements:\n%s", name, strings.Join(ran[name], "\n"))
	}
	const moved = "the counted costs per request moved: a change that adds a round trip fails here: say why in docs/performance.md#counted-costs and update the table there and countedCosts"
	for name, c := range got {
		want := countedCosts[name]
		if name == "write" {
			// The most a write costs: on a loaded machine a completion can
			// still find the one before it queued and share its statements
			// (a full run counted 59 over 20 writes once), never add one.
			require.LessOrEqual(t, c.PlatformStatements, want.PlatformStatements, "%s: %s", name, moved)
			require.GreaterOrEqual(t, c.PlatformStatements, want.PlatformStatements-0.1, "%s: the writes shared more statements than timing explains", name)
			c.PlatformStatements = want.PlatformStatements
		}
		require.Equal(t, want, c, "%s: %s; one request's platform statements:\n%s", name, moved, strings.Join(ran[name], "\n"))
	}
}
