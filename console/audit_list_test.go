package console_test

import (
	"context"
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/appruntime/appruntime/internal/audit"
)

func TestAuditSearchKeepsItsFiltersInTheURL(t *testing.T) {
	t.Parallel()
	c := newTestConsole(t)
	ctx := context.Background()
	ws := c.Tenant.Workspace.ID
	actor := "user:" + c.Tenant.Admin.ID
	require.NoError(t, audit.Record(ctx, c.Store.DB, audit.Entry{WorkspaceID: ws, Actor: actor, Action: "binding.save", TargetType: "binding", TargetID: "b42"}))
	require.NoError(t, audit.Record(ctx, c.Store.DB, audit.Entry{WorkspaceID: ws, Actor: "token:t1", Action: "queue.task.run", TargetType: "queue_task", TargetID: "job7"}))
	cl := c.signedIn(t)

	byActor := cl.get("/audit?actor=" + actor)
	require.Equal(t, http.StatusOK, byActor.Status, byActor.Body)
	require.Contains(t, byActor.Body, "b42")
	require.NotContains(t, byActor.Body, "job7")
	require.Contains(t, byActor.Body, `<option value="`+actor+`" selected>`+c.Tenant.Admin.Email+`</option>`, "the actor reads as a person and stays chosen")

	byObject := cl.get("/audit?object=queue_task&action=run")
	require.Contains(t, byObject.Body, "job7")
	require.NotContains(t, byObject.Body, "b42")

	none := cl.get("/audit?from=2000-01-01&to=2000-01-02")
	require.Contains(t, none.Body, "No entry matches this search.")
	today := cl.get("/audit?from=2000-01-01")
	require.Contains(t, today.Body, "b42")

	bad := cl.get("/audit?from=yesterday")
	require.Equal(t, http.StatusBadRequest, bad.Status)
}
