package task_test

import (
	"context"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/appruntime/appruntime/internal/apperr"
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
		svc := task.NewService(task.Options{Store: st, Log: discard, BundleBaseURL: bundleBase})

		for _, tc := range []struct {
			name string
			f    task.ListFilter
			want []string
		}{
			{"title, any case", task.ListFilter{Query: "quarterly"}, []string{report.ID}},
			{"percent is literal", task.ListFilter{Query: "50%"}, []string{discount.ID}},
			{"underscore is literal", task.ListFilter{Query: "a_b"}, []string{discount.ID}},
			{"underscore matches no other char", task.ListFilter{Query: "t_r"}, nil},
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
		}
		_, err := svc.ListWorkspace(ctx, tn.Workspace.ID, task.ListFilter{AgentID: "bob"})
		require.Equal(t, apperr.Invalid, apperr.CodeOf(err), "an agent that is no id is a 400, not a database error")
	})
}
