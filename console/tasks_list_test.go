package console_test

import (
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/appruntime/appruntime/internal/task"
	"github.com/appruntime/appruntime/models"
)

func TestTasksSearchKeepsItsFiltersInTheURL(t *testing.T) {
	t.Parallel()
	c := newTestConsole(t)
	f := seedDemo(t, c.P, c.Tenant)
	db := c.P.Store.DB
	rows := make([]models.Task, task.TasksPerPage+1)
	for i := range rows {
		rows[i] = models.Task{ID: models.NewID(), WorkspaceID: c.Tenant.Workspace.ID, AgentID: c.Tenant.Agent.ID,
			Title: fmt.Sprintf("Bulk 100%% import %02d", i), Status: models.TaskRunning}
	}
	require.NoError(t, db.Create(&rows).Error)
	cl := c.signedIn(t)

	found := cl.get("/tasks?q=acme")
	require.Equal(t, http.StatusOK, found.Status, found.Body)
	require.Contains(t, found.Body, `href="/tasks/`+f.TaskID+`"`)
	require.NotContains(t, found.Body, "Bulk 100% import")
	require.Contains(t, found.Body, `value="acme"`, "the search box keeps the text")

	none := cl.get("/tasks?q=" + url.QueryEscape("acme%") + "&agent=" + c.Tenant.Agent.ID)
	require.Contains(t, none.Body, "matches this search", "% is literal: no title holds \"acme%\"")

	first := cl.get("/tasks?q=" + url.QueryEscape("100% import"))
	require.NotContains(t, first.Body, "Review the ACME invoices")
	// The next page keeps the search and goes on after this page's last
	// task (keyset); html/template escapes the + and the &.
	link := regexp.MustCompile(`href="(/tasks\?before=[^"&]+&amp;page=2&amp;q=100%25&#43;import)"`).FindStringSubmatch(first.Body)
	require.NotNil(t, link, "the next page keeps the search: %s", first.Body)
	next := strings.NewReplacer("&amp;", "&", "&#43;", "+").Replace(link[1])
	second := cl.get(next)
	require.Equal(t, http.StatusOK, second.Status, second.Body)
	require.Contains(t, second.Body, "Bulk 100% import 00")
	require.Contains(t, second.Body, "page 2")
	require.NotContains(t, second.Body, "Bulk 100% import 01<", "page 2 starts after page 1's last task")
	bad := cl.get("/tasks?before=yesterday")
	require.Equal(t, http.StatusBadRequest, bad.Status)
}
