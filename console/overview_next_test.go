package console_test

import (
	"net/http"
	"net/url"
	"regexp"
	"testing"

	"github.com/stretchr/testify/require"
)

var nextPanel = regexp.MustCompile(`(?s)<section id="next".*?</section>`)

// TestOverviewNextPanelFollowsTheWorkspace: the landing page says the one
// thing to do now, from the workspace's state: with nothing yet, how to
// park a first task; with the demo's parked task, a link to it and the
// loop (open the artifact, approve, see the resume); once it is released,
// where its resume went.
func TestOverviewNextPanelFollowsTheWorkspace(t *testing.T) {
	t.Parallel()
	c := newTestConsole(t)
	cl := c.signedIn(t)
	next := func() string {
		t.Helper()
		p := cl.get("/")
		require.Equal(t, http.StatusOK, p.Status, p.Body)
		panel := nextPanel.FindString(p.Body)
		require.NotEmpty(t, panel, "the overview has a Next panel")
		return panel
	}

	require.Contains(t, next(), "No task yet.")

	f := seedDemo(t, c.P, c.Tenant)
	panel := next()
	require.Contains(t, panel, `<a class="button" id="next-open" href="/tasks/`+f.TaskID+`">`)
	require.Contains(t, panel, "Review the ACME invoices</a> ("+c.Tenant.Agent.Name+") is parked")
	require.Contains(t, panel, "Open artifact")
	require.Contains(t, panel, "See the resume")

	cl.get("/tasks/" + f.TaskID)
	p := cl.post("/tasks/"+f.TaskID+"/awaits/"+f.AwaitID+"/release", url.Values{"note": {"approved by phone"}})
	require.Less(t, p.Status, 400, p.Body)
	panel = next()
	require.NotContains(t, panel, "is parked")
	require.Contains(t, panel, "No task is waiting for a review. A reviewed task's resume goes to its agent")
	require.Contains(t, panel, `href="/webhooks"`)
}
