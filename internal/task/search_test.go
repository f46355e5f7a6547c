package task_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/appruntime/appruntime/internal/apperr"
	"github.com/appruntime/appruntime/internal/config"
	"github.com/appruntime/appruntime/internal/store"
	"github.com/appruntime/appruntime/internal/task"
	"github.com/appruntime/appruntime/internal/testkit"
	"github.com/appruntime/appruntime/models"
)

func TestWorkspaceTaskSearch(t *testing.T) {
	t.Parallel()
	testkit.EachDialect(t, func(t *testing.T, st *store.Store) {
		ctx := context.Background()
		tn := testkit.NewTenant(t, st.DB)
		other := testkit.NewTenant(t, st.DB)
		second := models.Agent{ID: models.NewID(), WorkspaceID: tn.Workspace.ID, Name: "Invoice Checker"}
		require.NoError(t, st.DB.Create(&second).Error)
		mk := func(ws, agent, title string) models.Task {
			v := models.Task{ID: models.NewID(), WorkspaceID: ws, AgentID: agent, Title: title, Status: models.TaskRunning}
			require.NoError(t, st.DB.Create(&v).Error)
			return v
		}
		report := mk(tn.Workspace.ID, tn.Agent.ID, "Quarterly Report")
		discount := mk(tn.Workspace.ID, tn.Agent.ID, "50% discount for a_b")
		invoice := mk(tn.Workspace.ID, second.ID, "Check")
		mk(other.Workspace.ID, other.Agent.ID, "Quarterly Report elsewhere") // never found: another workspace
		require.NoError(t, st.DB.Create(&models.AgentKeyValue{ID: models.NewID(), TaskID: invoice.ID, AgentID: second.ID,
			Key: "customer", Value: models.JSON(`"ACME Corp"`)}).Error)
		scan := task.NewService(task.Options{Store: st, Log: discard, BundleBaseURL: bundleBase})
		// indexed reads the trigram indexes (Postgres) as soon as the
		// newest task alone does not fill the page.
		indexed := task.NewService(task.Options{Store: st, Log: discard, BundleBaseURL: bundleBase})
		task.SetSearchBounds(indexed, 1, task.SearchScanBound)

		for _, svc := range []*task.Service{scan, indexed} {
			for _, tc := range []struct {
				name string
				f    task.ListFilter
				want []string
			}{
				{"title, any case", task.ListFilter{Query: "quarterly"}, []string{report.ID}},
				{"percent is literal", task.ListFilter{Query: "50%"}, []string{discount.ID}},
				{"underscore is literal", task.ListFilter{Query: "a_b"}, []string{discount.ID}},
				{"underscore matches no other char", task.ListFilter{Query: "t_r"}, nil},
				{"percent is literal, with a trigram", task.ListFilter{Query: "0% DISC"}, []string{discount.ID}},
				{"underscore is literal, with a trigram", task.ListFilter{Query: "for a_b"}, []string{discount.ID}},
				{"underscore matches no other char, with a trigram", task.ListFilter{Query: "for a_"}, []string{discount.ID}},
				{"percent matches no other text, with a trigram", task.ListFilter{Query: "50%disc"}, nil},
				{"full id", task.ListFilter{Query: invoice.ID}, []string{invoice.ID}},
				{"end of the id", task.ListFilter{Query: invoice.ID[len(invoice.ID)-12:]}, []string{invoice.ID}},
				{"start of the id", task.ListFilter{Query: strings.ToUpper(invoice.ID[:30])}, []string{invoice.ID}},
				{"key detail value", task.ListFilter{Query: "acme"}, []string{invoice.ID}},
				{"key detail key", task.ListFilter{Query: "customer"}, []string{invoice.ID}},
				{"agent name", task.ListFilter{Query: "invoice check"}, []string{invoice.ID}},
				{"agent", task.ListFilter{AgentID: tn.Agent.ID}, []string{discount.ID, report.ID}},
				{"agent and text", task.ListFilter{AgentID: second.ID, Query: "quarterly"}, nil},
				{"text and status", task.ListFilter{Query: "quarterly", Status: models.TaskFailed}, nil},
				{"another workspace's agent", task.ListFilter{AgentID: other.Agent.ID}, nil},
			} {
				page, err := svc.ListWorkspace(ctx, tn.Workspace.ID, tc.f)
				require.NoError(t, err, tc.name)
				require.ElementsMatch(t, tc.want, summaryIDs(page.Tasks), tc.name)
				if tc.f.Query != "" {
					require.Equal(t, st.Dialect == config.Postgres, page.SearchIndexed, "migration 0026 gives Postgres the trigram indexes")
				}
				require.Zero(t, page.SearchBound, tc.name)
			}
		}
		_, err := scan.ListWorkspace(ctx, tn.Workspace.ID, task.ListFilter{AgentID: "bob"})
		require.Equal(t, apperr.Invalid, apperr.CodeOf(err), "an agent that is no id is a 400, not a database error")
	})
}

// TestIndexedSearchPagesAndFilters: a search read through the trigram
// indexes (or, on SQLite, the bounded scan) pages by the keyset and keeps
// the list's filters and its workspace.
func TestIndexedSearchPagesAndFilters(t *testing.T) {
	t.Parallel()
	testkit.EachDialect(t, func(t *testing.T, st *store.Store) {
		ctx := context.Background()
		tn := testkit.NewTenant(t, st.DB)
		other := testkit.NewTenant(t, st.DB)
		base := time.Now().UTC().Add(-time.Hour)
		var want []string // newest first
		for i := range 60 {
			v := models.Task{ID: models.NewID(), WorkspaceID: tn.Workspace.ID, AgentID: tn.Agent.ID, Title: fmt.Sprintf("needle %d", i),
				Status: models.TaskRunning, CreatedAt: base.Add(time.Duration(i) * time.Second)}
			if i%3 == 0 {
				v.Status = models.TaskCompleted
			}
			require.NoError(t, st.DB.Create(&v).Error)
			require.NoError(t, st.DB.Create(&models.Task{ID: models.NewID(), WorkspaceID: tn.Workspace.ID, AgentID: tn.Agent.ID, Title: "hay",
				Status: models.TaskRunning, CreatedAt: base.Add(time.Duration(i)*time.Second + time.Millisecond)}).Error)
			require.NoError(t, st.DB.Create(&models.Task{ID: models.NewID(), WorkspaceID: other.Workspace.ID, AgentID: other.Agent.ID, Title: "needle elsewhere",
				Status: models.TaskRunning, CreatedAt: v.CreatedAt}).Error)
			want = append([]string{v.ID}, want...)
		}
		svc := task.NewService(task.Options{Store: st, Log: discard, BundleBaseURL: bundleBase})
		task.SetSearchBounds(svc, 1, task.SearchScanBound)

		first, err := svc.ListWorkspace(ctx, tn.Workspace.ID, task.ListFilter{Query: "NEEDLE"})
		require.NoError(t, err)
		require.Equal(t, want[:task.TasksPerPage], summaryIDs(first.Tasks), "newest first")
		require.True(t, first.HasMore)
		second, err := svc.ListWorkspace(ctx, tn.Workspace.ID, task.ListFilter{Query: "NEEDLE", Before: first.Next, Page: 2})
		require.NoError(t, err)
		require.Equal(t, want[task.TasksPerPage:], summaryIDs(second.Tasks))
		require.False(t, second.HasMore)

		done, err := svc.ListWorkspace(ctx, tn.Workspace.ID, task.ListFilter{Query: "needle", Status: models.TaskCompleted})
		require.NoError(t, err)
		require.Len(t, done.Tasks, 20)
		for _, s := range done.Tasks {
			require.Equal(t, models.TaskCompleted, s.Status)
		}
	})
}

// TestSearchWithoutAnIndexIsBounded: a query no trigram index serves (on
// Postgres, no run of three letters or digits; on SQLite, any) reads only the
// list's newest tasks, and the page says how many.
func TestSearchWithoutAnIndexIsBounded(t *testing.T) {
	t.Parallel()
	testkit.EachDialect(t, func(t *testing.T, st *store.Store) {
		ctx := context.Background()
		tn := testkit.NewTenant(t, st.DB)
		base := time.Now().UTC().Add(-time.Hour)
		ids := make([]string, 5) // oldest first
		for i := range ids {
			v := models.Task{ID: models.NewID(), WorkspaceID: tn.Workspace.ID, AgentID: tn.Agent.ID, Title: fmt.Sprintf("q%d", i),
				Status: models.TaskRunning, CreatedAt: base.Add(time.Duration(i) * time.Second)}
			require.NoError(t, st.DB.Create(&v).Error)
			ids[i] = v.ID
		}
		svc := task.NewService(task.Options{Store: st, Log: discard, BundleBaseURL: bundleBase})
		task.SetSearchBounds(svc, 1, 3)

		newest, err := svc.ListWorkspace(ctx, tn.Workspace.ID, task.ListFilter{Query: "q4"})
		require.NoError(t, err)
		require.Equal(t, []string{ids[4]}, summaryIDs(newest.Tasks))
		require.Equal(t, 3, newest.SearchBound, "fewer than a page found among the newest 3: older tasks were not read")

		oldest, err := svc.ListWorkspace(ctx, tn.Workspace.ID, task.ListFilter{Query: "q0"})
		require.NoError(t, err)
		require.Empty(t, oldest.Tasks, "the oldest task is past the bound")
		require.Equal(t, 3, oldest.SearchBound)

		edge, err := svc.ListWorkspace(ctx, tn.Workspace.ID, task.ListFilter{Query: "q2"})
		require.NoError(t, err)
		require.Equal(t, []string{ids[2]}, summaryIDs(edge.Tasks), "the third newest is inside the bound")

		all, err := svc.ListWorkspace(ctx, tn.Workspace.ID, task.ListFilter{Query: "q", Status: models.TaskRunning})
		require.NoError(t, err)
		require.Equal(t, []string{ids[4], ids[3], ids[2]}, summaryIDs(all.Tasks))

		if st.Dialect == config.Postgres {
			// A query with a trigram reads every task through the indexes.
			long, err := svc.ListWorkspace(ctx, tn.Workspace.ID, task.ListFilter{Query: "q0 "})
			require.NoError(t, err)
			require.Equal(t, 3, long.SearchBound, "q0 and a space still has no three letters or digits in a row")
			require.NoError(t, st.DB.Model(&models.Task{}).Where("id = ?", ids[0]).Update("title", "q0 oldest").Error)
			found, err := svc.ListWorkspace(ctx, tn.Workspace.ID, task.ListFilter{Query: "oldest"})
			require.NoError(t, err)
			require.Equal(t, []string{ids[0]}, summaryIDs(found.Tasks))
			require.Zero(t, found.SearchBound)
		}
	})
}
