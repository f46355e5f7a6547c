package task_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/appruntime/appruntime/internal/apperr"
	"github.com/appruntime/appruntime/internal/store"
	"github.com/appruntime/appruntime/internal/task"
	"github.com/appruntime/appruntime/internal/testkit"
	"github.com/appruntime/appruntime/internal/webhook"
	"github.com/appruntime/appruntime/models"
)

// parkAt parks task on a new app-tool step whose await was registered at since.
func (f fixture) parkAt(t *testing.T, taskID string, since time.Time) models.TaskAwait {
	t.Helper()
	db := f.st.DB
	require.NoError(t, db.Model(&models.Task{}).Where("id = ?", taskID).Update("status", models.TaskWaitingForInput).Error)
	step := models.Step{ID: models.NewID(), TaskID: taskID, Kind: models.StepAppTool, ConfiguredToolID: &f.awaiting.ID, Status: models.StepCompleted}
	require.NoError(t, db.Create(&step).Error)
	aw := models.TaskAwait{ID: models.NewID(), TaskID: taskID, SourceType: models.AwaitSourceAppTool, CorrelationKey: step.ID,
		Status: models.AwaitPending, CreatedAt: since}
	require.NoError(t, db.Create(&aw).Error)
	return aw
}

func TestWorkspaceTaskLists(t *testing.T) {
	t.Parallel()
	f := newFixture(t, nil)
	ctx := context.Background()
	ws := f.tenant.Workspace.ID
	older, newer, running := f.newTask(t), f.newTask(t), f.newTask(t)
	now := time.Now().UTC()
	olderAwait := f.parkAt(t, older.ID, now.Add(-3*time.Hour))
	f.parkAt(t, newer.ID, now.Add(-10*time.Minute))
	other := testkit.NewTenant(t, f.st.DB)
	require.NoError(t, f.st.DB.Create(&models.Task{ID: models.NewID(), WorkspaceID: other.Workspace.ID, AgentID: other.Agent.ID,
		Status: models.TaskWaitingForInput}).Error)

	page, err := f.svc.ListWorkspace(ctx, ws, task.ListFilter{})
	require.NoError(t, err)
	require.Equal(t, []string{running.ID, newer.ID, older.ID}, summaryIDs(page.Tasks), "newest first, this workspace only")
	require.False(t, page.HasMore)
	require.Equal(t, f.tenant.Agent.Name, page.Tasks[0].AgentName)
	require.Nil(t, page.Tasks[0].ParkedSince, "a running task is held by nothing")
	require.Equal(t, olderAwait.ID, page.Tasks[2].PendingAwaitID)
	require.WithinDuration(t, now.Add(-3*time.Hour), *page.Tasks[2].ParkedSince, time.Second)

	page, err = f.svc.ListWorkspace(ctx, ws, task.ListFilter{Status: models.TaskWaitingForInput})
	require.NoError(t, err)
	require.Equal(t, []string{newer.ID, older.ID}, summaryIDs(page.Tasks))

	_, err = f.svc.ListWorkspace(ctx, ws, task.ListFilter{Status: "parked"})
	require.True(t, apperr.Is(err, apperr.Invalid), "%v", err)
	require.ErrorContains(t, err, `status "parked" must be one of`)

	parked, err := f.svc.Parked(ctx, ws, 10)
	require.NoError(t, err)
	require.Equal(t, []string{older.ID, newer.ID}, summaryIDs(parked), "the longest-parked first")
	parked, err = f.svc.Parked(ctx, ws, 1)
	require.NoError(t, err)
	require.Equal(t, []string{older.ID}, summaryIDs(parked))

	counts, err := f.svc.CountByStatus(ctx, ws)
	require.NoError(t, err)
	require.Equal(t, map[string]int64{models.TaskWaitingForInput: 2, models.TaskRunning: 1, models.TaskFailed: 0, models.TaskCompleted: 0}, counts)
}

func TestWorkspaceTaskListPages(t *testing.T) {
	t.Parallel()
	f := newFixture(t, nil)
	ctx := context.Background()
	start := time.Now().UTC().Add(-time.Hour)
	rows := make([]models.Task, task.TasksPerPage+2)
	for i := range rows {
		rows[i] = models.Task{ID: models.NewID(), WorkspaceID: f.tenant.Workspace.ID, AgentID: f.tenant.Agent.ID,
			Title: fmt.Sprintf("t%02d", i), Status: models.TaskRunning, CreatedAt: start.Add(time.Duration(i) * time.Second)}
	}
	require.NoError(t, f.st.DB.Create(&rows).Error)

	first, err := f.svc.ListWorkspace(ctx, f.tenant.Workspace.ID, task.ListFilter{Page: 1})
	require.NoError(t, err)
	require.Len(t, first.Tasks, task.TasksPerPage)
	require.True(t, first.HasMore)
	require.Equal(t, fmt.Sprintf("t%02d", task.TasksPerPage+1), first.Tasks[0].Title)
	second, err := f.svc.ListWorkspace(ctx, f.tenant.Workspace.ID, task.ListFilter{Page: 2})
	require.NoError(t, err)
	require.Equal(t, []string{"t01", "t00"}, []string{second.Tasks[0].Title, second.Tasks[1].Title})
	require.False(t, second.HasMore)

	// Keyset: the page after first's cursor is the same page, found
	// through the index; two tasks made in the same instant are told apart
	// by their ids, and a forged cursor is a 400.
	require.NotEmpty(t, first.Next)
	keyset, err := f.svc.ListWorkspace(ctx, f.tenant.Workspace.ID, task.ListFilter{Page: 2, Before: first.Next})
	require.NoError(t, err)
	require.Equal(t, []string{"t01", "t00"}, []string{keyset.Tasks[0].Title, keyset.Tasks[1].Title})
	require.Equal(t, 2, keyset.Page)
	require.Empty(t, keyset.Next)
	_, err = f.svc.ListWorkspace(ctx, f.tenant.Workspace.ID, task.ListFilter{Before: "yesterday_" + rows[0].ID})
	require.Equal(t, apperr.Invalid, apperr.CodeOf(err))
}

// TestWorkspaceTaskListKeysetOnSQLite: the dev mode pages the same way,
// tasks of one instant included.
func TestWorkspaceTaskListKeysetOnSQLite(t *testing.T) {
	t.Parallel()
	st := testkit.SQLite(t)
	tn := testkit.NewTenant(t, st.DB)
	svc := task.NewService(task.Options{Store: st, Log: discard, BundleBaseURL: bundleBase})
	at := time.Now().UTC().Add(-time.Hour).Truncate(time.Second)
	var want []string
	for i := range task.TasksPerPage + 5 {
		row := models.Task{ID: models.NewID(), WorkspaceID: tn.Workspace.ID, AgentID: tn.Agent.ID, Title: fmt.Sprintf("s%02d", i),
			Status: models.TaskRunning, CreatedAt: at.Add(time.Duration(i/4) * time.Second)}
		require.NoError(t, st.DB.Create(&row).Error)
		want = append(want, row.ID)
	}
	var got []string
	before := ""
	for range 5 {
		page, err := svc.ListWorkspace(context.Background(), tn.Workspace.ID, task.ListFilter{Before: before})
		require.NoError(t, err)
		for _, s := range page.Tasks {
			got = append(got, s.ID)
		}
		if !page.HasMore {
			break
		}
		before = page.Next
	}
	require.ElementsMatch(t, want, got, "every task once, none twice")
	require.Len(t, got, len(want))
}

func TestInspect(t *testing.T) {
	t.Parallel()
	f := newFixture(t, nil)
	ctx := context.Background()
	v := f.newTask(t)
	aw := f.parkAt(t, v.ID, time.Now().UTC())
	// The resume event's decision (issue 29 §3), as HandleResume records it;
	// older than the events shown, and read all the same.
	resumed := webhook.Event{Type: webhook.TaskResumed, TaskID: v.ID, AwaitID: aw.ID,
		Decision: &webhook.Decision{Outcome: "reject", Reason: "duplicate of INV-1041", Writes: []webhook.Write{}}}
	require.NoError(t, f.st.DB.Create(&models.FeedEvent{TaskID: v.ID, Type: models.FeedTaskResumed, Actor: "system",
		Payload: models.MustJSON(resumed)}).Error)
	events := make([]models.FeedEvent, task.MaxFeedEventsShown+5)
	for i := range events {
		events[i] = models.FeedEvent{TaskID: v.ID, Type: models.FeedAgentAction, Name: fmt.Sprintf("e%03d", i), Actor: "system"}
	}
	require.NoError(t, f.st.DB.Create(&events).Error)

	d, err := f.svc.Inspect(ctx, f.tenant.Workspace.ID, v.ID)
	require.NoError(t, err)
	require.Equal(t, v.ID, d.ID)
	require.Equal(t, models.TaskWaitingForInput, d.Status)
	require.Len(t, d.Steps, 1)
	require.Len(t, d.Awaits, 1)
	require.Equal(t, aw.ID, d.Awaits[0].ID)
	require.True(t, d.Awaits[0].Pending())
	require.Equal(t, "reject", d.Awaits[0].Outcome, "the await shows what its resume event decided")
	require.Equal(t, "duplicate of INV-1041", d.Awaits[0].DecisionReason)
	require.True(t, d.EventsTruncated)
	require.Len(t, d.Events, task.MaxFeedEventsShown)
	require.Equal(t, "e005", d.Events[0].Name, "the oldest shown event comes first")
	require.Equal(t, fmt.Sprintf("e%03d", len(events)-1), d.Events[len(d.Events)-1].Name, "the newest is last")

	other := testkit.NewTenant(t, f.st.DB)
	for _, id := range []string{v.ID, models.NewID(), "nope"} {
		ws := other.Workspace.ID
		if id != v.ID {
			ws = f.tenant.Workspace.ID
		}
		_, err := f.svc.Inspect(ctx, ws, id)
		require.True(t, apperr.Is(err, apperr.NotFound), "%s: %v", id, err)
	}
}

func summaryIDs(list []task.Summary) []string {
	ids := make([]string, len(list))
	for i, s := range list {
		ids[i] = s.ID
	}
	return ids
}

// TestWorkspaceTaskListPoolFilter: filtering by review pool reads the
// pool's rows by their copy of the task's created_at (0023) and lists
// exactly what "the workspace's tasks routed to the pool, newest first"
// does, on Postgres and on SQLite (the dev mode): tasks of one instant,
// tasks of another pool and of another workspace, the other filters and
// the search combined, every keyset page.
func TestWorkspaceTaskListPoolFilter(t *testing.T) {
	t.Parallel()
	for name, open := range map[string]func(testing.TB) *store.Store{"postgres": testkit.Tx, "sqlite": testkit.SQLite} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			st := open(t)
			ctx := context.Background()
			tn, other := testkit.NewTenant(t, st.DB), testkit.NewTenant(t, st.DB)
			svc := task.NewService(task.Options{Store: st, Log: discard, BundleBaseURL: bundleBase})
			pool := func(ws string) string {
				p := models.ReviewPool{ID: models.NewID(), WorkspaceID: ws, Name: models.NewID(), CreatedAt: time.Now(), UpdatedAt: time.Now()}
				require.NoError(t, st.DB.Create(&p).Error)
				return p.ID
			}
			mine, beside, theirs := pool(tn.Workspace.ID), pool(tn.Workspace.ID), pool(other.Workspace.ID)
			at := time.Now().UTC().Add(-time.Hour).Truncate(time.Second)
			var all []models.Task
			routed := map[string]bool{}
			for i := range 2*task.TasksPerPage + 7 {
				status := models.TaskRunning
				if i%3 == 0 {
					status = models.TaskCompleted
				}
				row := models.Task{ID: models.NewID(), WorkspaceID: tn.Workspace.ID, AgentID: tn.Agent.ID, Title: fmt.Sprintf("p%03d", i),
					Status: status, CreatedAt: at.Add(time.Duration(i/3) * time.Second)} // three tasks an instant
				require.NoError(t, st.DB.Create(&row).Error)
				all = append(all, row)
				to := beside
				if i%5 != 4 {
					to, routed[row.ID] = mine, true
				}
				require.NoError(t, st.DB.Create(&models.TaskReviewPool{TaskID: row.ID, PoolID: to, TaskCreatedAt: row.CreatedAt}).Error)
			}
			foreign := models.Task{ID: models.NewID(), WorkspaceID: other.Workspace.ID, AgentID: other.Agent.ID, Status: models.TaskRunning, CreatedAt: at}
			require.NoError(t, st.DB.Create(&foreign).Error)
			require.NoError(t, st.DB.Create(&models.TaskReviewPool{TaskID: foreign.ID, PoolID: theirs, TaskCreatedAt: at}).Error)
			// want is the filter's meaning, computed here: the pool's tasks
			// passing keep, by (created_at, id) descending.
			want := func(keep func(models.Task) bool) []string {
				var rows []models.Task
				for _, r := range all {
					if routed[r.ID] && keep(r) {
						rows = append(rows, r)
					}
				}
				slices.SortFunc(rows, func(a, b models.Task) int {
					if c := b.CreatedAt.Compare(a.CreatedAt); c != 0 {
						return c
					}
					return strings.Compare(b.ID, a.ID)
				})
				ids := []string{}
				for _, r := range rows {
					ids = append(ids, r.ID)
				}
				return ids
			}
			for _, c := range []struct {
				name string
				f    task.ListFilter
				keep func(models.Task) bool
			}{
				{"pool", task.ListFilter{PoolID: mine}, func(models.Task) bool { return true }},
				{"pool and status", task.ListFilter{PoolID: mine, Status: models.TaskCompleted},
					func(r models.Task) bool { return r.Status == models.TaskCompleted }},
				{"pool and agent", task.ListFilter{PoolID: mine, AgentID: tn.Agent.ID}, func(models.Task) bool { return true }},
				{"pool and search", task.ListFilter{PoolID: mine, Query: "P01"}, func(r models.Task) bool { return strings.HasPrefix(r.Title, "p01") }},
			} {
				var got []string
				f := c.f
				for pages := 0; ; pages++ {
					require.Less(t, pages, 10, c.name)
					page, err := svc.ListWorkspace(ctx, tn.Workspace.ID, f)
					require.NoError(t, err, c.name)
					require.LessOrEqual(t, len(page.Tasks), task.TasksPerPage)
					got = append(got, summaryIDs(page.Tasks)...)
					if !page.HasMore {
						break
					}
					f.Before, f.Page = page.Next, page.Page+1
				}
				require.Equal(t, want(c.keep), got, c.name)
			}
			page, err := svc.ListWorkspace(ctx, tn.Workspace.ID, task.ListFilter{PoolID: theirs})
			require.NoError(t, err)
			require.Empty(t, page.Tasks, "another workspace's pool lists none of its tasks here")
		})
	}
}
