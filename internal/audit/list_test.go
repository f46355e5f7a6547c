package audit_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/appruntime/appruntime/internal/audit"
	"github.com/appruntime/appruntime/internal/testkit"
)

func TestListPagesNewestFirst(t *testing.T) {
	t.Parallel()
	st := testkit.Tx(t)
	ctx := context.Background()
	tn := testkit.NewTenant(t, st.DB)
	other := testkit.NewTenant(t, st.DB)
	for i := range audit.EntriesPerPage + 3 {
		require.NoError(t, audit.Record(ctx, st.DB, audit.Entry{WorkspaceID: tn.Workspace.ID, Actor: "user:a", Action: "thing.change",
			TargetType: "thing", TargetID: fmt.Sprintf("t%02d", i), Detail: map[string]int{"n": i}}))
	}
	require.NoError(t, audit.Record(ctx, st.DB, audit.Entry{WorkspaceID: other.Workspace.ID, Actor: "user:b", Action: "elsewhere", TargetType: "x", TargetID: "y"}))

	first, err := audit.List(ctx, st.DB, tn.Workspace.ID, 0)
	require.NoError(t, err)
	require.Equal(t, 1, first.Page)
	require.True(t, first.HasMore)
	require.Len(t, first.Entries, audit.EntriesPerPage)
	require.Equal(t, fmt.Sprintf("t%02d", audit.EntriesPerPage+2), first.Entries[0].TargetID, "newest first")
	require.JSONEq(t, fmt.Sprintf(`{"n":%d}`, audit.EntriesPerPage+2), string(first.Entries[0].Detail))

	second, err := audit.List(ctx, st.DB, tn.Workspace.ID, 2)
	require.NoError(t, err)
	require.False(t, second.HasMore)
	require.Len(t, second.Entries, 3)
	require.Equal(t, "t00", second.Entries[2].TargetID)
	for _, e := range append(first.Entries, second.Entries...) {
		require.NotEqual(t, "elsewhere", e.Action, "another workspace's entries are not listed")
	}
}
