package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/valyala/fasthttp"

	"github.com/appruntime/appruntime/internal/auth"
	"github.com/appruntime/appruntime/internal/store"
	"github.com/appruntime/appruntime/models"
)

// reviewAgents is how many agents the parked tasks of the review phase
// belong to, each with a priority field.
const reviewAgents = 5

// reviewFixture is the review phase's workspace: its parked tasks and one
// host token per reviewer.
type reviewFixture struct {
	workspaceID string
	tokens      []string
	userIDs     []string
}

// seedReview parks tasks tasks (each with an app-tool step and a pending
// await) across reviewAgents agents with priorities, plus as many completed
// tasks (the bulk of a real table, which the queue's partial index leaves
// out), and makes reviewers reviewer users with host tokens.
func seedReview(ctx context.Context, dbURL string, tasks, reviewers int) (reviewFixture, error) {
	st, err := store.Open(ctx, dbURL, store.Options{MaxOpenConns: 2})
	if err != nil {
		return reviewFixture{}, err
	}
	defer st.Close()
	db := st.DB.WithContext(ctx)
	ws := models.Workspace{ID: models.NewID(), Name: "review bench"}
	if err := db.Create(&ws).Error; err != nil {
		return reviewFixture{}, err
	}
	agents := make([]string, reviewAgents)
	for i := range agents {
		a := models.Agent{ID: models.NewID(), WorkspaceID: ws.ID, Name: fmt.Sprintf("agent %d", i), PriorityField: "amount"}
		if err := db.Create(&a).Error; err != nil {
			return reviewFixture{}, err
		}
		agents[i] = a.ID
	}
	array := "{" + strings.Join(agents, ",") + "}"
	for _, q := range []struct {
		sql  string
		args []any
	}{
		{`INSERT INTO tasks (id, workspace_id, agent_id, title, status, priority, created_at, updated_at)
		  SELECT gen_random_uuid(), ?, (?::uuid[])[1 + g % 5], 'bench ' || g,
		         CASE WHEN g <= ? THEN 'waiting_for_input' ELSE 'completed' END,
		         (g * 7919) % 10000, now() - g * interval '1 second', now()
		  FROM generate_series(1, ?) g`, []any{ws.ID, array, tasks, 2 * tasks}},
		{`INSERT INTO steps (id, task_id, kind, status, created_at, updated_at)
		  SELECT gen_random_uuid(), id, 'app_tool', 'completed', created_at, created_at FROM tasks
		  WHERE workspace_id = ? AND status = 'waiting_for_input'`, []any{ws.ID}},
		{`INSERT INTO task_awaits (id, task_id, source_type, correlation_key, status, created_at)
		  SELECT gen_random_uuid(), s.task_id, 'app_tool', s.id::text, 'pending', s.created_at
		  FROM steps s JOIN tasks t ON t.id = s.task_id WHERE t.workspace_id = ?`, []any{ws.ID}},
		{`ANALYZE tasks`, nil}, {`ANALYZE task_awaits`, nil},
	} {
		if err := db.Exec(q.sql, q.args...).Error; err != nil {
			return reviewFixture{}, fmt.Errorf("seed review tasks: %w", err)
		}
	}
	fx := reviewFixture{workspaceID: ws.ID}
	for i := range reviewers {
		u := models.User{ID: models.NewID(), WorkspaceID: ws.ID, Email: fmt.Sprintf("reviewer%d@example.test", i), Role: models.RoleReviewer, PasswordHash: "-"}
		if err := db.Create(&u).Error; err != nil {
			return reviewFixture{}, err
		}
		_, token, err := auth.IssueToken(ctx, st.DB, ws.ID, models.ScopeHost, "bench", &u.ID, nil)
		if err != nil {
			return reviewFixture{}, err
		}
		fx.tokens, fx.userIDs = append(fx.tokens, token), append(fx.userIDs, u.ID)
	}
	return fx, nil
}

// reviewResult is one side of the review phase: claim latencies and claims,
// and the api process's CPU time meanwhile (zero for the raw side).
type reviewResult struct {
	claims  []time.Duration
	elapsed time.Duration
	cpu     time.Duration
}

func (r reviewResult) percentiles() (p50, p99 time.Duration) {
	sort.Slice(r.claims, func(i, j int) bool { return r.claims[i] < r.claims[j] })
	return r.claims[len(r.claims)/2], r.claims[len(r.claims)*99/100]
}

func (r reviewResult) perSecond() float64 { return float64(len(r.claims)) / r.elapsed.Seconds() }

// reviewLoop runs one claim-then-release loop per reviewer for d.
func reviewLoop(ctx context.Context, reviewers int, d time.Duration, claimAndRelease func(ctx context.Context, w int) (time.Duration, error)) (reviewResult, error) {
	deadline := time.Now().Add(d)
	lat := make([][]time.Duration, reviewers)
	errc := make(chan error, reviewers)
	var wg sync.WaitGroup
	start := time.Now()
	for w := range reviewers {
		wg.Go(func() {
			for time.Now().Before(deadline) && ctx.Err() == nil {
				took, err := claimAndRelease(ctx, w)
				if err != nil {
					errc <- err
					return
				}
				lat[w] = append(lat[w], took)
			}
		})
	}
	wg.Wait()
	out := reviewResult{elapsed: time.Since(start)}
	select {
	case err := <-errc:
		return out, err
	default:
	}
	for _, l := range lat {
		out.claims = append(out.claims, l...)
	}
	if len(out.claims) == 0 {
		return out, errors.New("no claim completed")
	}
	return out, nil
}

// apiClaim claims through POST /api/review/next (timed) and releases
// through /abort (not timed).
func apiClaim(addr string, fx reviewFixture) func(ctx context.Context, w int) (time.Duration, error) {
	client := &fasthttp.HostClient{Addr: addr, MaxConns: len(fx.tokens), ReadTimeout: 10 * time.Second}
	post := func(path, token string) ([]byte, time.Duration, error) {
		req, res := fasthttp.AcquireRequest(), fasthttp.AcquireResponse()
		defer fasthttp.ReleaseRequest(req)
		defer fasthttp.ReleaseResponse(res)
		req.SetRequestURI("http://" + addr + path)
		req.Header.SetMethod("POST")
		req.Header.Set("Authorization", "Bearer "+token)
		t0 := time.Now()
		err := client.Do(req, res)
		took := time.Since(t0)
		if err == nil && res.StatusCode() != 200 {
			err = fmt.Errorf("%s answered %d: %s", path, res.StatusCode(), res.Body())
		}
		return append([]byte(nil), res.Body()...), took, err
	}
	return func(_ context.Context, w int) (time.Duration, error) {
		body, took, err := post("/api/review/next", fx.tokens[w])
		if err != nil {
			return 0, err
		}
		var out struct {
			Task *struct {
				TaskID string `json:"task_id"`
			} `json:"task"`
		}
		if err := json.Unmarshal(body, &out); err != nil || out.Task == nil {
			return 0, fmt.Errorf("review/next handed nothing: %s", body)
		}
		_, _, err = post("/api/review/tasks/"+out.Task.TaskID+"/abort", fx.tokens[w])
		return took, err
	}
}

// rawClaimSQL is the queue's claim as one statement through pgx: the
// baseline without HTTP, auth or the assigned-to-me pass (the API's claim
// runs both passes in its one statement).
var rawClaimSQL = "UPDATE tasks SET claimed_by = $2, claim_expires_at = now() + interval '20 minutes', assigned_to = $2\nWHERE id = (" +
	fmt.Sprintf(claimCandidateSQL, "") + ")\nRETURNING id"

func rawClaim(pool *pgxpool.Pool, fx reviewFixture) func(ctx context.Context, w int) (time.Duration, error) {
	return func(ctx context.Context, w int) (time.Duration, error) {
		var id string
		t0 := time.Now()
		err := pool.QueryRow(ctx, rawClaimSQL, fx.workspaceID, fx.userIDs[w]).Scan(&id)
		took := time.Since(t0)
		if err != nil {
			return 0, fmt.Errorf("raw claim: %w", err)
		}
		_, err = pool.Exec(ctx, `UPDATE tasks SET claimed_by = NULL, claim_expires_at = NULL, assigned_to = NULL WHERE id = $1`, id)
		return took, err
	}
}

// claimCandidateSQL is the queue's candidate query (claim.Queue's claim
// without its update); claimPasses are its two passes: the tasks assigned
// to the reviewer ($2), then everyone's.
const claimCandidateSQL = `SELECT t.id FROM tasks t
JOIN task_awaits a ON a.task_id = t.id AND a.status = 'pending' AND a.source_type = 'app_tool'
WHERE t.workspace_id = $1 AND t.status = 'waiting_for_input'
  AND (t.claim_expires_at IS NULL OR t.claim_expires_at <= now())%s
ORDER BY t.priority DESC, t.created_at, t.id LIMIT 1 FOR UPDATE OF t, a SKIP LOCKED`

var claimPasses = []struct{ name, filter string }{
	{"assigned-to-me pass", "\n  AND t.assigned_to = $2"},
	{"queue pass", ""},
}

// explainClaim prints the plans of the queue's candidate queries, as a
// reviewer claiming runs them.
func explainClaim(ctx context.Context, pool *pgxpool.Pool, fx reviewFixture) error {
	for _, pass := range claimPasses {
		args := []any{fx.workspaceID}
		if pass.filter != "" {
			args = append(args, fx.userIDs[0])
		}
		rows, err := pool.Query(ctx, "EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF, SUMMARY OFF) "+fmt.Sprintf(claimCandidateSQL, pass.filter), args...)
		if err != nil {
			return err
		}
		lines, err := pgx.CollectRows(rows, pgx.RowTo[string])
		if err != nil {
			return err
		}
		fmt.Printf("\nreview/next candidate query plan, %s:\n", pass.name)
		for _, l := range lines {
			fmt.Println("  " + l)
		}
	}
	return nil
}

// reviewPhase measures POST /api/review/next (claim, then release) against
// the raw claim statement, reviewers at once, and returns its summary line.
func reviewPhase(ctx context.Context, apiAddr, dbURL string, apiPid, tasks, reviewers int, d time.Duration) (string, error) {
	t0 := time.Now()
	fx, err := seedReview(ctx, dbURL, tasks, reviewers)
	if err != nil {
		return "", err
	}
	fmt.Printf("\nreview queue: %d parked tasks (+%d completed) across %d agents, %d reviewers, seeded in %s\n",
		tasks, tasks, reviewAgents, reviewers, time.Since(t0).Round(time.Millisecond))
	pool, err := pgxpool.New(ctx, withParam(dbURL, "pool_max_conns", fmt.Sprint(reviewers)))
	if err != nil {
		return "", err
	}
	defer pool.Close()
	if err := explainClaim(ctx, pool, fx); err != nil {
		return "", err
	}
	var results [2]reviewResult
	for i, side := range []func(ctx context.Context, w int) (time.Duration, error){rawClaim(pool, fx), apiClaim(apiAddr, fx)} {
		if _, err := reviewLoop(ctx, reviewers, time.Second, side); err != nil { // warm-up
			return "", err
		}
		cpu0, err := cpuTime(apiPid)
		if err != nil {
			return "", err
		}
		if results[i], err = reviewLoop(ctx, reviewers, d, side); err != nil {
			return "", err
		}
		cpu1, err := cpuTime(apiPid)
		if err != nil {
			return "", err
		}
		if i == 1 {
			results[i].cpu = cpu1 - cpu0
		}
	}
	fmt.Printf("%-22s %10s %9s %9s %22s\n", "claim", "claims/s", "p50", "p99", "api CPU/claim+release")
	for i, name := range []string{"raw SQL (pgx)", "POST /api/review/next"} {
		p50, p99 := results[i].percentiles()
		cpu := "-"
		if results[i].cpu > 0 {
			cpu = fmt.Sprintf("%.0fµs", float64(results[i].cpu.Microseconds())/float64(len(results[i].claims)))
		}
		fmt.Printf("%-22s %10.0f %9s %9s %22s\n", name, results[i].perSecond(), ms(p50), ms(p99), cpu)
	}
	_, p99 := results[1].percentiles()
	_, rawP99 := results[0].percentiles()
	listP99, err := listPhase(ctx, dbURL, pool, fx)
	if err != nil {
		return "", fmt.Errorf("task list: %w", err)
	}
	return fmt.Sprintf("review_next_p99_ms=%.2f review_claims_per_s=%.0f review_p99_ratio=%.2f task_list_worst_p99_ms=%.2f",
		float64(p99.Microseconds())/1000, results[1].perSecond(), float64(p99)/float64(rawP99), float64(listP99.Microseconds())/1000), nil
}
