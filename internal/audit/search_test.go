package audit_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/appruntime/appruntime/internal/audit"
	"github.com/appruntime/appruntime/internal/store"
	"github.com/appruntime/appruntime/internal/testkit"
	"github.com/appruntime/appruntime/models"
)

func TestSearchKeepsWhatItsFilterNames(t *testing.T) {
	t.Parallel()
	testkit.EachDialect(t, func(t *testing.T, st *store.Store) {
		ctx := context.Background()
		tn := testkit.NewTenant(t, st.DB)
		other := testkit.NewTenant(t, st.DB)
		day := time.Date(2026, 3, 10, 12, 0, 0, 0, time.UTC)
		for _, e := range []struct {
			ws, actor, action, typ, id string
			at                         time.Time
		}{
			{tn.Workspace.ID, "user:alice", "binding.save", "binding", "b-1", day.Add(-48 * time.Hour)},
			{tn.Workspace.ID, "token:t1", "queue.task.run", "queue_task", "job-7", day},
			{tn.Workspace.ID, "user:alice", "token.issue", "token", "t-9", day.Add(48 * time.Hour)},
			{other.Workspace.ID, "user:alice", "binding.save", "binding", "b-2", day},
		} {
			require.NoError(t, audit.Record(ctx, st.DB, audit.Entry{WorkspaceID: e.ws, Actor: e.actor, Action: e.action, TargetType: e.typ, TargetID: e.id}))
			require.NoError(t, st.DB.Model(&models.AuditEntry{}).Where("target_id = ?", e.id).Update("created_at", e.at).Error)
		}
		for _, tc := range []struct {
			name string
			f    audit.Filter
			want []string
		}{
			{"everything, newest first", audit.Filter{}, []string{"t-9", "job-7", "b-1"}},
			{"actor", audit.Filter{Actor: "user:alice"}, []string{"t-9", "b-1"}},
			{"action, any case", audit.Filter{Action: "BINDING"}, []string{"b-1"}},
			{"object type", audit.Filter{Object: "queue_task"}, []string{"job-7"}},
			{"object id", audit.Filter{Object: "t-9"}, []string{"t-9"}},
			{"underscore is literal", audit.Filter{Object: "b_1"}, nil},
			{"from", audit.Filter{From: day}, []string{"t-9", "job-7"}},
			{"to excludes its instant", audit.Filter{To: day}, []string{"b-1"}},
			{"range", audit.Filter{From: day.Add(-time.Hour), To: day.Add(time.Hour)}, []string{"job-7"}},
			{"actor and action", audit.Filter{Actor: "token:t1", Action: "binding"}, nil},
		} {
			page, err := audit.Search(ctx, st.DB, tn.Workspace.ID, tc.f, 1)
			require.NoError(t, err, tc.name)
			var got []string
			for _, e := range page.Entries {
				got = append(got, e.TargetID)
			}
			require.Equal(t, tc.want, got, tc.name)
		}
	})
}
