package console_test

import (
	"context"
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/appruntime/appruntime/internal/audit"
	"github.com/appruntime/appruntime/models"
)

func TestAuditSearchKeepsItsFiltersInTheURL(t *testing.T) {
	t.Parallel()
	c := newTestConsole(t)
	ctx := context.Background()
	ws := c.Tenant.Workspace.ID
	actor := "user:" + c.Tenant.Admin.ID
	require.NoError(t, audit.Record(ctx, c.Store.DB, audit.Entry{WorkspaceID: ws, Actor: actor, Action: "binding.save", TargetType: "binding", TargetID: "bind-qx42"}))
	require.NoError(t, audit.Record(ctx, c.Store.DB, audit.Entry{WorkspaceID: ws, Actor: "token:t1", Action: "queue.task.run", TargetType: "queue_task", TargetID: "job-qx7"}))
	cl := c.signedIn(t)

	byActor := cl.get("/audit?actor=" + actor)
	require.Equal(t, http.StatusOK, byActor.Status, byActor.Body)
	require.Contains(t, byActor.Body, "bind-qx42")
	require.NotContains(t, byActor.Body, "job-qx7")
	require.Contains(t, byActor.Body, `<option value="`+actor+`" selected>`+c.Tenant.Admin.Email+`</option>`, "the actor reads as a person and stays chosen")

	byObject := cl.get("/audit?object=queue_task&action=run")
	require.Contains(t, byObject.Body, "job-qx7")
	require.NotContains(t, byObject.Body, "bind-qx42")

	none := cl.get("/audit?from=2000-01-01&to=2000-01-02")
	require.Contains(t, none.Body, "No entry matches this search.")
	today := cl.get("/audit?from=2000-01-01")
	require.Contains(t, today.Body, "bind-qx42")

	bad := cl.get("/audit?from=yesterday")
	require.Equal(t, http.StatusBadRequest, bad.Status)
}

// TestAuditReadsAsNames: an entry made with a named token reads as the
// token's name, its target (an agent) by name and linked, the full ids one
// click away; an unknown actor and target keep their raw ids.
func TestAuditReadsAsNames(t *testing.T) {
	t.Parallel()
	c := newTestConsole(t)
	ctx := context.Background()
	ws, agent := c.Tenant.Workspace.ID, c.Tenant.Agent
	tok := models.APIToken{ID: models.NewID(), WorkspaceID: ws, Scope: "admin", Name: "release pipeline", TokenHash: models.NewID()}
	require.NoError(t, c.Store.DB.Create(&tok).Error)
	gone := models.NewID()
	require.NoError(t, audit.Record(ctx, c.Store.DB, audit.Entry{WorkspaceID: ws, Actor: "token:" + tok.ID, Action: "agent.update", TargetType: "agent", TargetID: agent.ID}))
	require.NoError(t, audit.Record(ctx, c.Store.DB, audit.Entry{WorkspaceID: ws, Actor: "token:" + gone, Action: "binding.delete", TargetType: "binding", TargetID: gone}))
	cl := c.signedIn(t)

	p := cl.get("/audit")
	require.Equal(t, http.StatusOK, p.Status, p.Body)
	require.Contains(t, p.Body, `title="token:`+tok.ID+`">release pipeline (token)</a>`)
	require.Contains(t, p.Body, `<a href="/agents/`+agent.ID+`">`+agent.Name+`</a>`)
	require.Contains(t, p.Body, `data-copy="`+agent.ID+`"`, "the full id is one click away")
	require.Contains(t, p.Body, `>token:`+gone+`</a>`, "an unknown actor reads as its raw id")
	require.Contains(t, p.Body, `data-copy="`+gone+`"`)
	require.Contains(t, p.Body, `<script src="/static/copy.js" defer></script>`)
}
