package claim_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/appruntime/appruntime/internal/apperr"
	"github.com/appruntime/appruntime/internal/claim"
	"github.com/appruntime/appruntime/internal/store"
	"github.com/appruntime/appruntime/internal/testkit"
	"github.com/appruntime/appruntime/models"
)

// routeFixture is a tenant with a queue and helpers to park tasks and make
// reviewers.
type routeFixture struct {
	st  *store.Store
	tn  testkit.Tenant
	q   *claim.Queue
	now time.Time
}

func newRouteFixture(t *testing.T, st *store.Store) *routeFixture {
	now := time.Now().UTC()
	return &routeFixture{st: st, tn: testkit.NewTenant(t, st.DB), now: now,
		q: claim.NewQueue(claim.QueueOptions{Store: st, Now: func() time.Time { return now }})}
}

// park parks a task of agentID, routed the way a step's creation routes it.
func (f *routeFixture) park(t *testing.T, agentID, title string, priority float64) string {
	t.Helper()
	task := models.Task{ID: models.NewID(), WorkspaceID: f.tn.Workspace.ID, AgentID: agentID, Title: title,
		Status: models.TaskWaitingForInput, Priority: priority, CreatedAt: f.now, UpdatedAt: f.now}
	require.NoError(t, f.st.DB.Create(&task).Error)
	step := models.Step{ID: models.NewID(), TaskID: task.ID, Kind: models.StepAppTool, Status: models.StepCompleted}
	require.NoError(t, f.st.DB.Create(&step).Error)
	require.NoError(t, f.st.DB.Create(&models.TaskAwait{ID: models.NewID(), TaskID: task.ID, SourceType: models.AwaitSourceAppTool,
		CorrelationKey: step.ID, Status: models.AwaitPending}).Error)
	require.NoError(t, claim.RouteToAgentPools(context.Background(), f.st.DB, task.ID, agentID))
	return task.ID
}

func (f *routeFixture) reviewer(t *testing.T) string {
	t.Helper()
	id := models.NewID()
	require.NoError(t, f.st.DB.Create(&models.User{ID: id, WorkspaceID: f.tn.Workspace.ID, Email: id + "@example.test",
		Role: models.RoleReviewer, PasswordHash: "-"}).Error)
	return id
}

func (f *routeFixture) setLimit(t *testing.T, n int) {
	t.Helper()
	require.NoError(t, f.st.DB.Model(&models.Workspace{}).Where("id = ?", f.tn.Workspace.ID).Update("review_claim_limit", n).Error)
}

// TestClaimLimitOnBothDialects: at the workspace's limit review/next is a
// 409 naming the held claims; finishing one frees a slot; a raised limit
// lets more through; an expired claim does not count.
func TestClaimLimitOnBothDialects(t *testing.T) {
	t.Parallel()
	testkit.EachDialect(t, func(t *testing.T, st *store.Store) {
		f := newRouteFixture(t, st)
		ctx := context.Background()
		first, second, third := f.park(t, f.tn.Agent.ID, "first", 3), f.park(t, f.tn.Agent.ID, "second", 2), f.park(t, f.tn.Agent.ID, "third", 1)
		me := f.reviewer(t)

		c, err := f.q.Next(ctx, f.tn.Workspace.ID, me)
		require.NoError(t, err)
		require.Equal(t, first, c.TaskID)
		_, err = f.q.Next(ctx, f.tn.Workspace.ID, me)
		require.Equal(t, apperr.Conflict, apperr.CodeOf(err), "%v", err)
		detail := apperr.DetailOf(err)
		require.Equal(t, claim.ClaimLimitReached, detail["code"])
		require.Equal(t, 1, detail["claim_limit"])
		held := detail["held_claims"].([]claim.HeldClaim)
		require.Len(t, held, 1)
		require.Equal(t, first, held[0].TaskID)
		require.Equal(t, "first", held[0].Title)
		require.WithinDuration(t, c.ClaimExpiresAt, held[0].ClaimExpiresAt, time.Millisecond)
		var claimed int64
		require.NoError(t, st.DB.Model(&models.Task{}).Where("claimed_by = ?", me).Count(&claimed).Error)
		require.Equal(t, int64(1), claimed, "the refused request claimed nothing")

		// Another reviewer is not held back by mine.
		other := f.reviewer(t)
		c2, err := f.q.Next(ctx, f.tn.Workspace.ID, other)
		require.NoError(t, err)
		require.Equal(t, second, c2.TaskID)

		// Putting the task back frees the slot.
		require.NoError(t, f.q.Abort(ctx, f.tn.Workspace.ID, me, first))
		c, err = f.q.Next(ctx, f.tn.Workspace.ID, me)
		require.NoError(t, err)
		require.Equal(t, first, c.TaskID)

		// A raised limit lets a second claim through, and then there is
		// nothing left: nil, not a conflict.
		f.setLimit(t, 2)
		c, err = f.q.Next(ctx, f.tn.Workspace.ID, me)
		require.NoError(t, err)
		require.Equal(t, third, c.TaskID)
		f.setLimit(t, 3)
		none, err := f.q.Next(ctx, f.tn.Workspace.ID, me)
		require.NoError(t, err)
		require.Nil(t, none)

		// An expired claim is not held.
		f.setLimit(t, 1)
		require.NoError(t, st.DB.Model(&models.Task{}).Where("id = ?", third).Update("claim_expires_at", f.now.Add(-time.Second)).Error)
		_, err = f.q.Next(ctx, f.tn.Workspace.ID, me)
		require.Equal(t, apperr.Conflict, apperr.CodeOf(err))
		require.Len(t, apperr.DetailOf(err)["held_claims"], 1, "only the live claim on first is named")

		// The limit is 1..100 in the schema itself.
		for _, bad := range []int{0, 101} {
			require.Error(t, st.DB.Model(&models.Workspace{}).Where("id = ?", f.tn.Workspace.ID).Update("review_claim_limit", bad).Error, bad)
		}
	})
}

// TestClaimLimitHoldsUnderConcurrency: one reviewer at limit 1 asking for
// the next task from many goroutines at once gets exactly one claim.
func TestClaimLimitHoldsUnderConcurrency(t *testing.T) {
	t.Parallel()
	testkit.EachDialect(t, func(t *testing.T, st *store.Store) {
		f := newRouteFixture(t, st)
		for range 6 {
			f.park(t, f.tn.Agent.ID, "t", 1)
		}
		ctx := context.Background()
		for round := range 3 {
			me := f.reviewer(t)
			var wg sync.WaitGroup
			var mu sync.Mutex
			claims, conflicts := 0, 0
			start := make(chan struct{})
			for range 4 {
				wg.Go(func() {
					<-start
					c, err := f.q.Next(ctx, f.tn.Workspace.ID, me)
					mu.Lock()
					defer mu.Unlock()
					switch {
					case err == nil && c != nil:
						claims++
					case apperr.Is(err, apperr.Conflict):
						conflicts++
					default:
						t.Errorf("round %d: unexpected %v, %v", round, c, err)
					}
				})
			}
			close(start)
			wg.Wait()
			require.Equal(t, 1, claims, "round %d", round)
			require.Equal(t, 3, conflicts, "round %d", round)
			var held int64
			require.NoError(t, st.DB.Model(&models.Task{}).Where("claimed_by = ?", me).Count(&held).Error)
			require.Equal(t, int64(1), held)
		}
	})
}

// TestReviewPoolsRouteTasks: a task parked for an agent with pools goes to
// those pools' members only; an agent without pools parks tasks for anyone;
// an assignment wins over the pools.
func TestReviewPoolsRouteTasks(t *testing.T) {
	t.Parallel()
	testkit.EachDialect(t, func(t *testing.T, st *store.Store) {
		f := newRouteFixture(t, st)
		ctx := context.Background()
		f.setLimit(t, 10)
		pool := func(name string) string {
			p := models.ReviewPool{ID: models.NewID(), WorkspaceID: f.tn.Workspace.ID, Name: name, CreatedAt: f.now, UpdatedAt: f.now}
			require.NoError(t, st.DB.Create(&p).Error)
			return p.ID
		}
		invoices, contracts := pool("invoices"), pool("contracts")
		pooled := models.Agent{ID: models.NewID(), WorkspaceID: f.tn.Workspace.ID, Name: "pooled"}
		require.NoError(t, st.DB.Create(&pooled).Error)
		require.NoError(t, st.DB.Create(&models.AgentReviewPool{AgentID: pooled.ID, PoolID: invoices}).Error)
		require.NoError(t, st.DB.Create(&models.AgentReviewPool{AgentID: pooled.ID, PoolID: contracts}).Error)
		clerk, lawyer, outsider := f.reviewer(t), f.reviewer(t), f.reviewer(t)
		require.NoError(t, st.DB.Create(&models.ReviewPoolMember{PoolID: invoices, UserID: clerk}).Error)
		require.NoError(t, st.DB.Create(&models.ReviewPoolMember{PoolID: contracts, UserID: lawyer}).Error)

		routedA := f.park(t, pooled.ID, "routed a", 9)
		routedB := f.park(t, pooled.ID, "routed b", 8)
		open := f.park(t, f.tn.Agent.ID, "open", 1)
		var pools []models.TaskReviewPool
		require.NoError(t, st.DB.Where("task_id = ?", routedA).Find(&pools).Error)
		require.Len(t, pools, 2, "the task took its agent's two pools")
		var routed models.Task
		require.NoError(t, st.DB.Where("id = ?", routedA).Take(&routed).Error)
		for _, p := range pools {
			require.True(t, routed.CreatedAt.Equal(p.TaskCreatedAt), "the pool row copies the task's created_at (the task list's pool index)")
		}

		c, err := f.q.Next(ctx, f.tn.Workspace.ID, outsider)
		require.NoError(t, err)
		require.Equal(t, open, c.TaskID, "an outsider passes over the higher-priority routed tasks")
		none, err := f.q.Next(ctx, f.tn.Workspace.ID, outsider)
		require.NoError(t, err)
		require.Nil(t, none)
		c, err = f.q.Next(ctx, f.tn.Workspace.ID, clerk)
		require.NoError(t, err)
		require.Equal(t, routedA, c.TaskID)
		c, err = f.q.Next(ctx, f.tn.Workspace.ID, lawyer)
		require.NoError(t, err)
		require.Equal(t, routedB, c.TaskID)

		// An assignment names the person: it wins over the pools.
		require.NoError(t, f.q.Abort(ctx, f.tn.Workspace.ID, lawyer, routedB))
		require.NoError(t, st.DB.Model(&models.Task{}).Where("id = ?", routedB).Update("assigned_to", outsider).Error)
		c, err = f.q.Next(ctx, f.tn.Workspace.ID, outsider)
		require.NoError(t, err)
		require.Equal(t, routedB, c.TaskID)

		// Parked again after the agent lost its pools: open to anyone.
		require.NoError(t, st.DB.Where("agent_id = ?", pooled.ID).Delete(&models.AgentReviewPool{}).Error)
		require.NoError(t, claim.RouteToAgentPools(ctx, st.DB, routedA, pooled.ID))
		require.NoError(t, st.DB.Where("task_id = ?", routedA).Find(&pools).Error)
		require.Empty(t, pools)
	})
}

// TestNextSendsItsLockAndClaimAsOneBatch: on Postgres a review/next sends
// the reviewer's lock and the claim together, in the implicit transaction
// of one batch: two statements and no BEGIN or COMMIT, where a transaction
// costs four round trips. The limit still holds
// (TestClaimLimitHoldsUnderConcurrency), and a reviewer at it still gets
// the 409 naming the claim (a third statement, only then).
func TestNextSendsItsLockAndClaimAsOneBatch(t *testing.T) {
	t.Parallel()
	counter := testkit.NewPGCounter(t)
	st, err := store.Open(context.Background(), counter.Rewrite(testkit.URLOf(testkit.Schema(t))), store.Options{MaxOpenConns: 1})
	require.NoError(t, err)
	t.Cleanup(func() { _ = st.Close() })
	f := newRouteFixture(t, st)
	for range 3 {
		f.park(t, f.tn.Agent.ID, "t", 1)
	}
	f.setLimit(t, 2)
	ctx := context.Background()
	me := f.reviewer(t)
	_, err = f.q.Next(ctx, f.tn.Workspace.ID, me) // prepares the statements on the connection
	require.NoError(t, err)

	before := counter.Count()
	c, err := f.q.Next(ctx, f.tn.Workspace.ID, me)
	require.NoError(t, err)
	require.NotNil(t, c)
	got := counter.Count().Sub(before)
	require.Equal(t, testkit.PGCount{Statements: 2}, testkit.PGCount{Statements: got.Statements, Transactions: got.Transactions},
		"%q", counter.Statements(int(before.Statements)))

	before = counter.Count()
	_, err = f.q.Next(ctx, f.tn.Workspace.ID, me)
	require.True(t, apperr.Is(err, apperr.Conflict), "%v", err)
	got = counter.Count().Sub(before)
	require.EqualValues(t, 3, got.Statements, "%q", counter.Statements(int(before.Statements)))
}
