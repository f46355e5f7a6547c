package console_test

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/appruntime/appruntime/internal/queue"
	"github.com/appruntime/appruntime/internal/web"
)

// paused reports whether the console's platform sees queue q paused.
func paused(t *testing.T, c *testConsole, q string) bool {
	t.Helper()
	qs, err := c.P.JobQueues.Queues(context.Background())
	require.NoError(t, err)
	for _, info := range qs {
		if info.Name == q {
			return info.Paused
		}
	}
	t.Fatalf("no queue %s", q)
	return false
}

// TestQueueActionsAreForOperatorsOnly: the queues serve every workspace, so
// a workspace admin who is not one of OPERATOR_USER_IDS sees the Queues page
// without its buttons and is refused (403, nothing changed, nothing audited)
// when posting an action anyway; the same admin named an operator pauses
// the queue.
func TestQueueActionsAreForOperatorsOnly(t *testing.T) {
	t.Parallel()
	c := newTestConsole(t)
	events := c.P.Queues.Events
	cl := c.signedIn(t)

	page := cl.get("/queues?queue=" + events + "&state=pending")
	require.Equal(t, http.StatusOK, page.Status, page.Body)
	require.Contains(t, page.Body, `id="not-operator"`)
	require.NotContains(t, page.Body, `action="/queues/`+events+`/pause"`)
	for _, path := range []string{"/pause", "/resume", "/tasks/0b6c3f9e-6d0a-4c38-9a51-3f3b5d3f0f7e/cancel", "/tasks/x/delete"} {
		p := cl.post("/queues/"+events+path, nil)
		require.Equal(t, http.StatusForbidden, p.Status, "%s: %s", path, p.Body)
		require.Contains(t, p.Body, "operators")
	}
	require.False(t, paused(t, c, events))
	require.Zero(t, auditCount(t, c.Store, c.Tenant.Workspace.ID, queue.ActionPause, events))

	// The same platform with the admin named an operator.
	c.P.Config.OperatorUserIDs = []string{c.Tenant.Admin.ID}
	ln, err := web.Listen("127.0.0.1:0")
	require.NoError(t, err)
	serve(t, mustConsole(t, c.P), ln)
	op := *c
	op.URL = "http://" + ln.Addr().String()
	ocl := op.signedIn(t)
	page = ocl.get("/queues")
	require.NotContains(t, page.Body, `id="not-operator"`)
	require.Contains(t, page.Body, `action="/queues/`+events+`/pause"`)
	p := ocl.post("/queues/"+events+"/pause", nil)
	require.Equal(t, http.StatusSeeOther, p.Status, p.Body)
	require.True(t, strings.HasPrefix(p.Header.Get("Location"), "/queues?queue="+events))
	require.True(t, paused(t, c, events))
	require.EqualValues(t, 1, auditCount(t, c.Store, c.Tenant.Workspace.ID, queue.ActionPause, events))
}
