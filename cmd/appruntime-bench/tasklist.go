package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"sort"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/appruntime/appruntime/internal/logging"
	"github.com/appruntime/appruntime/internal/store"
	"github.com/appruntime/appruntime/internal/task"
	"github.com/appruntime/appruntime/models"
)

// listSamples is how many times each console task list query is timed.
const listSamples = 200

// listCase is one console task list query: a search, a filter or a page
// deep in the list.
type listCase struct {
	name string
	f    task.ListFilter
}

// routeToPool routes every fourth of the review workspace's tasks to a
// review pool of its own, for the list's pool filter, and returns the
// pool's id. Completed tasks only: the claim passes measured beside it
// see the same parked tasks as before.
func routeToPool(ctx context.Context, pool *pgxpool.Pool, fx reviewFixture) (string, error) {
	id := models.NewID()
	_, err := pool.Exec(ctx, `INSERT INTO review_pools (id, workspace_id, name, created_at, updated_at) VALUES ($1, $2, 'bench pool', now(), now())`, id, fx.workspaceID)
	if err != nil {
		return "", err
	}
	_, err = pool.Exec(ctx, `INSERT INTO task_review_pools (task_id, pool_id, task_created_at)
	  SELECT id, $2, created_at FROM tasks WHERE workspace_id = $1 AND status = 'completed' AND (priority::int % 4) = 0`, fx.workspaceID, id)
	if err != nil {
		return "", err
	}
	_, err = pool.Exec(ctx, `ANALYZE task_review_pools`)
	return id, err
}

// listPhase times the console task list's query (task.Service.ListWorkspace,
// what GET /tasks runs) on the review phase's workspace: the newest page,
// each filter, searches that match many tasks and one, and a page 100
// pages deep by its keyset cursor. It prints each query's p50 and p99 and
// the plans of the filters, and returns the worst p99.
func listPhase(ctx context.Context, dbURL string, pool *pgxpool.Pool, fx reviewFixture) (time.Duration, error) {
	poolID, err := routeToPool(ctx, pool, fx)
	if err != nil {
		return 0, fmt.Errorf("route tasks to a pool: %w", err)
	}
	st, err := store.Open(ctx, dbURL, store.Options{MaxOpenConns: 2})
	if err != nil {
		return 0, err
	}
	defer st.Close()
	svc := task.NewService(task.Options{Store: st, Log: logging.New(io.Discard, slog.LevelError)})
	var agentID string
	if err := pool.QueryRow(ctx, `SELECT id FROM agents WHERE workspace_id = $1 ORDER BY name LIMIT 1`, fx.workspaceID).Scan(&agentID); err != nil {
		return 0, err
	}
	// A cursor 100 pages deep, walked to once.
	deep := task.ListFilter{}
	for range 100 {
		p, err := svc.ListWorkspace(ctx, fx.workspaceID, deep)
		if err != nil {
			return 0, err
		}
		deep.Before, deep.Page = p.Next, p.Page+1
	}
	cases := []listCase{
		{"newest page", task.ListFilter{}},
		{"status filter", task.ListFilter{Status: models.TaskCompleted}},
		{"agent filter", task.ListFilter{AgentID: agentID}},
		{"pool filter", task.ListFilter{PoolID: poolID}},
		{"search, many match", task.ListFilter{Query: "bench 1"}},
		{"search + status", task.ListFilter{Query: "bench 7", Status: models.TaskWaitingForInput}},
		{"search, one matches", task.ListFilter{Query: "bench 4242"}},
		{"search, no trigram", task.ListFilter{Query: "x9"}},
		{"page 100 (keyset)", deep},
	}
	fmt.Printf("\nconsole task list (task.Service.ListWorkspace, %d samples each)\n%-22s %9s %9s %6s\n", listSamples, "query", "p50", "p99", "rows")
	var worst time.Duration
	for _, c := range cases {
		lat := make([]time.Duration, 0, listSamples)
		rows := 0
		for range listSamples {
			t0 := time.Now()
			p, err := svc.ListWorkspace(ctx, fx.workspaceID, c.f)
			lat = append(lat, time.Since(t0))
			if err != nil {
				return 0, fmt.Errorf("%s: %w", c.name, err)
			}
			rows = len(p.Tasks)
		}
		sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
		p50, p99 := lat[len(lat)/2], lat[len(lat)*99/100]
		worst = max(worst, p99)
		fmt.Printf("%-22s %9s %9s %6d\n", c.name, ms(p50), ms(p99), rows)
	}
	if err := explainSearch(ctx, st, fx.workspaceID, "bench 4242"); err != nil {
		return 0, err
	}
	return worst, explainList(ctx, pool, fx, agentID, poolID)
}

// explainSearch prints the plan of a rare search as the list reads it
// through the trigram indexes (task.IndexedSearch, migration 0026).
func explainSearch(ctx context.Context, st *store.Store, workspaceID, text string) error {
	var lines []string
	err := st.DB.WithContext(ctx).Raw(`EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF, SUMMARY OFF) SELECT tasks.* FROM tasks
	  WHERE tasks.workspace_id = ? AND ? ORDER BY tasks.created_at DESC, tasks.id DESC LIMIT 51`,
		workspaceID, task.IndexedSearch(st.DB, workspaceID, text, nil)).Scan(&lines).Error
	if err != nil {
		return err
	}
	fmt.Printf("\ntask list query plan, search %q through the trigram indexes:\n", text)
	for _, l := range lines {
		fmt.Println("  " + l)
	}
	return nil
}

// listPlans are the list's filters as ListWorkspace writes them: a join,
// a condition and the keyset's order.
var listPlans = []struct{ name, join, where, order string }{
	{"status filter", "", `AND status = 'completed'`, "tasks.created_at DESC, tasks.id DESC"},
	{"agent filter", "", `AND agent_id = $2`, "tasks.created_at DESC, tasks.id DESC"},
	{"pool filter", `JOIN task_review_pools tp ON tp.task_id = tasks.id AND tp.pool_id = $3`, "", "tp.task_created_at DESC, tp.task_id DESC"},
}

// explainList prints the plans of the list's filters.
func explainList(ctx context.Context, pool *pgxpool.Pool, fx reviewFixture, agentID, poolID string) error {
	for _, p := range listPlans {
		sql := `EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF, SUMMARY OFF) SELECT tasks.* FROM tasks ` + p.join + ` WHERE tasks.workspace_id = $1 ` + p.where +
			` AND $2::uuid IS NOT NULL AND $3::uuid IS NOT NULL ORDER BY ` + p.order + ` LIMIT 51`
		rows, err := pool.Query(ctx, sql, fx.workspaceID, agentID, poolID)
		if err != nil {
			return err
		}
		lines, err := pgx.CollectRows(rows, pgx.RowTo[string])
		if err != nil {
			return err
		}
		fmt.Printf("\ntask list query plan, %s:\n", p.name)
		for _, l := range lines {
			fmt.Println("  " + l)
		}
	}
	return nil
}
