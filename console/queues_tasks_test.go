package console_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hibiken/asynq"
	"github.com/stretchr/testify/require"

	"github.com/appruntime/appruntime/internal/queue"
)

// TestQueueTaskPage: a task's page shows its payload as indented JSON with
// markup escaped, its type, state, attempts and timeline; a payload over
// queue.MaxPayloadDetail is cut with a note; the listing links to the page;
// an unknown id or queue is a 404.
func TestQueueTaskPage(t *testing.T) {
	t.Parallel()
	c := newTestConsole(t)
	q := c.P.Queues.Lookup
	id := enqueue(t, c.P.Redis, q, kindOK, `{"note":"<script>alert(1)</script>","n":7}`, asynq.MaxRetry(3))
	bigPayload := `{"blob":"` + strings.Repeat("a", queue.MaxPayloadDetail) + `"}`
	big := enqueue(t, c.P.Redis, q, kindOK, bigPayload)
	theirs := enqueue(t, c.P.Redis, q, kindOK, `{"workspace_id":"0b6c3f9e-other","input":{"secret":"s3cret"}}`)
	ours := enqueue(t, c.P.Redis, q, kindOK, `{"workspace_id":"`+c.Tenant.Workspace.ID+`","input":{"mine":"m1ne"}}`)
	cl := c.signedIn(t)

	list := cl.get("/queues?queue=" + url.QueryEscape(q))
	require.Contains(t, list.Body, `<a href="/queues/`+q+`/tasks/`+id+`">`)

	p := cl.get("/queues/" + q + "/tasks/" + id)
	require.Equal(t, http.StatusOK, p.Status, p.Body)
	require.Contains(t, p.Body, `<pre id="payload">{
  &#34;note&#34;: &#34;&lt;script&gt;alert(1)&lt;/script&gt;&#34;,
  &#34;n&#34;: 7
}</pre>`)
	require.NotContains(t, p.Body, "<script>alert")
	require.Contains(t, p.Body, `<dd class="kind">`+kindOK+`</dd>`)
	require.Contains(t, p.Body, `<dd class="state">pending</dd>`)
	require.Contains(t, p.Body, `retried 0 of at most 3`)
	require.Regexp(t, `<tr class="enqueued"><th>Pending since</th><td>\d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC</td>`, p.Body)
	require.NotContains(t, p.Body, `id="payload-cut"`)

	p = cl.get("/queues/" + q + "/tasks/" + big)
	require.Equal(t, http.StatusOK, p.Status)
	require.Contains(t, p.Body, fmt.Sprintf(`id="payload-cut">The payload is %d bytes: its first 65536 bytes are shown.`, len(bigPayload)))
	require.Less(t, len(p.Body), queue.MaxPayloadDetail+20<<10)

	// Another workspace's job (a /run carries its input): its payload is
	// for the deployment's operators only, on the page and in the listing;
	// the workspace's own is shown.
	p = cl.get("/queues/" + q + "/tasks/" + theirs)
	require.Equal(t, http.StatusOK, p.Status)
	require.Contains(t, p.Body, `id="payload-hidden"`)
	require.NotContains(t, p.Body, "s3cret")
	require.NotContains(t, list.Body, "s3cret")
	require.Contains(t, list.Body, "m1ne")
	p = cl.get("/queues/" + q + "/tasks/" + ours)
	require.Contains(t, p.Body, "m1ne")
	p = operatorView(t, c).signedIn(t).get("/queues/" + q + "/tasks/" + theirs)
	require.Contains(t, p.Body, "s3cret", "an operator reads every job's payload")

	require.Equal(t, http.StatusNotFound, cl.get("/queues/"+q+"/tasks/0b6c3f9e-6d0a-4c38-9a51-3f3b5d3f0f7e").Status)
	require.Equal(t, http.StatusNotFound, cl.get("/queues/"+c.P.Queues.Extract+"/tasks/"+id).Status, "the task is not in that queue")
	require.Equal(t, http.StatusNotFound, cl.get("/queues/nope/tasks/"+id).Status)
}

// TestQueueTaskSearch: the listing filters by an id's start and by a
// type's substring, both in the URL, and says when nothing matches.
func TestQueueTaskSearch(t *testing.T) {
	t.Parallel()
	c := newTestConsole(t)
	q := c.P.Queues.Lookup
	a := enqueue(t, c.P.Redis, q, "alpha_job", `{}`)
	b := enqueue(t, c.P.Redis, q, "beta_job", `{}`)
	b2 := enqueue(t, c.P.Redis, q, "beta_job", `{}`)
	cl := c.signedIn(t)
	rows := func(query string) []string {
		t.Helper()
		p := cl.get("/queues?queue=" + url.QueryEscape(q) + "&state=pending&" + query)
		require.Equal(t, http.StatusOK, p.Status, p.Body)
		var ids []string
		for _, id := range []string{a, b, b2} {
			if strings.Contains(p.Body, `<tr data-task="`+id+`">`) {
				ids = append(ids, id)
			}
		}
		return ids
	}
	require.ElementsMatch(t, []string{a, b, b2}, rows(""))
	require.ElementsMatch(t, []string{b, b2}, rows("kind=BETA"))
	require.ElementsMatch(t, []string{a}, rows("id="+a[:8]))
	require.ElementsMatch(t, []string{b2}, rows("id="+b2+"&kind=beta"))
	require.Empty(t, rows("id="+a+"&kind=beta"))
	p := cl.get("/queues?queue=" + url.QueryEscape(q) + "&kind=gamma")
	require.Contains(t, p.Body, `No pending task matches type “gamma”.`)
	require.Contains(t, p.Body, `name="kind" value="gamma"`, "the search box keeps the query")
	require.Equal(t, http.StatusBadRequest, cl.get("/queues?queue="+url.QueryEscape(q)+"&kind="+strings.Repeat("x", 101)).Status)
}

// TestQueueBulkActions: an operator archives two selected pending tasks and
// an unknown id in one post: the two are archived and audited one by one,
// the unknown id is reported and nothing else is touched; a batch of only
// refusals answers with the refusal's status; a bad action or an empty
// selection is a 400, as is a form of thousands of ids, refused at once; a
// workspace admin who is not an operator is refused.
func TestQueueBulkActions(t *testing.T) {
	t.Parallel()
	c := newOperatorConsole(t)
	q := c.P.Queues.Lookup
	one := enqueue(t, c.P.Redis, q, kindOK, `{"n":1}`)
	two := enqueue(t, c.P.Redis, q, kindOK, `{"n":2}`)
	kept := enqueue(t, c.P.Redis, q, kindOK, `{"n":3}`)
	unknown := "0b6c3f9e-6d0a-4c38-9a51-3f3b5d3f0f7e"
	cl := c.signedIn(t)
	list := cl.get("/queues?queue=" + url.QueryEscape(q) + "&state=pending")
	require.Contains(t, list.Body, `<form id="bulk" method="post" action="/queues/`+q+`/tasks">`)
	require.Contains(t, list.Body, `<input type="checkbox" name="id" value="`+one+`" form="bulk"`)

	p := cl.post("/queues/"+q+"/tasks", url.Values{"action": {"archive"}, "state": {"pending"}, "id": {one, unknown, two, one}})
	require.Equal(t, http.StatusOK, p.Status, p.Body)
	require.Contains(t, p.Body, `id="bulk-summary" data-done="2" data-failed="1"`)
	require.Contains(t, p.Body, `<h1>Archive: 3 selected tasks</h1>`)
	require.Contains(t, p.Body, `<tr data-task="`+one+`" class="done">
    <td><code>`+one+`</code></td>
    <td>archived</td>`)
	require.Contains(t, p.Body, `<tr data-task="`+unknown+`" class="refused">`)
	require.Contains(t, p.Body, "is not in queue")
	states := func() map[string]string {
		out := map[string]string{}
		insp := asynq.NewInspectorFromRedisClient(c.P.Redis)
		for _, id := range []string{one, two, kept} {
			ti, err := insp.GetTaskInfo(q, id)
			require.NoError(t, err)
			out[id] = ti.State.String()
		}
		return out
	}
	require.Equal(t, map[string]string{one: "archived", two: "archived", kept: "pending"}, states())
	for _, id := range []string{one, two} {
		require.EqualValues(t, 1, auditCount(t, c.Store, c.Tenant.Workspace.ID, queue.ActionArchive, id))
	}
	require.Zero(t, auditCount(t, c.Store, c.Tenant.Workspace.ID, queue.ActionArchive, unknown))

	// Running them again from the archived listing; archiving a task twice
	// is refused (a conflict) and is the answer's status.
	p = cl.post("/queues/"+q+"/tasks", url.Values{"action": {"archive"}, "state": {"archived"}, "id": {one}})
	require.Equal(t, http.StatusConflict, p.Status, p.Body)
	p = cl.post("/queues/"+q+"/tasks", url.Values{"action": {"run"}, "state": {"archived"}, "id": {one, two}})
	require.Equal(t, http.StatusOK, p.Status, p.Body)
	require.Equal(t, map[string]string{one: "pending", two: "pending", kept: "pending"}, states())
	require.EqualValues(t, 1, auditCount(t, c.Store, c.Tenant.Workspace.ID, queue.ActionRun, two))

	for name, form := range map[string]url.Values{
		"unknown action": {"action": {"explode"}, "id": {one}},
		"no selection":   {"action": {"delete"}},
		"too many":       {"action": {"delete"}, "id": manyIDs(queue.MaxBatch + 1)},
	} {
		p := cl.post("/queues/"+q+"/tasks", form)
		require.Equal(t, http.StatusBadRequest, p.Status, "%s: %s", name, p.Body)
	}
	// A form of 8000 distinct ids (short ones: the form fits the console's
	// 64 KiB body cap, so the refusal is the batch's own) is refused at the
	// (MaxBatch+1)th id, in one pass: the quadratic de-duplication took
	// 0.7 s of CPU for it before a set capped it.
	huge := make([]string, 8000)
	for i := range huge {
		huge[i] = strconv.FormatInt(int64(36*36*36+i), 36)
	}
	start := time.Now()
	p = cl.post("/queues/"+q+"/tasks", url.Values{"action": {"delete"}, "id": huge})
	require.Equal(t, http.StatusBadRequest, p.Status, p.Body)
	require.Contains(t, p.Body, "a bulk action takes at most 100 tasks; select fewer")
	require.Less(t, time.Since(start), 3*time.Second, "refused quickly")
	require.Equal(t, http.StatusNotFound, cl.post("/queues/nope/tasks", url.Values{"action": {"delete"}, "id": {one}}).Status)
	require.Equal(t, map[string]string{one: "pending", two: "pending", kept: "pending"}, states())

	// Not an operator: refused, nothing done.
	plain := newTestConsole(t)
	pq := plain.P.Queues.Lookup
	pid := enqueue(t, plain.P.Redis, pq, kindOK, `{}`)
	pcl := plain.signedIn(t)
	list = pcl.get("/queues?queue=" + url.QueryEscape(pq))
	require.NotContains(t, list.Body, `id="bulk"`)
	require.Equal(t, http.StatusForbidden, pcl.post("/queues/"+pq+"/tasks", url.Values{"action": {"delete"}, "id": {pid}}).Status)
}

// manyIDs is n distinct made-up task ids.
func manyIDs(n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = "id-" + strings.Repeat("x", i%5) + string(rune('a'+i%26)) + string(rune('a'+i/26))
	}
	return out
}

// TestQueueLastErrorIsForItsWorkspace: a failed job's last error quotes
// what it touched, so a workspace admin reads it only for jobs that name
// their workspace; another workspace's job and a job that carries ids only
// show that an error happened, not what it said. An operator reads all.
func TestQueueLastErrorIsForItsWorkspace(t *testing.T) {
	t.Parallel()
	c := newTestConsole(t)
	q := c.P.Queues.Lookup
	theirs := enqueue(t, c.P.Redis, q, kindFail, `{"workspace_id":"0b6c3f9e-other","fail":"their-secret"}`)
	idsOnly := enqueue(t, c.P.Redis, q, kindFail, `{"event_id":"e1","fail":"ids-secret"}`)
	ours := enqueue(t, c.P.Redis, q, kindFail, `{"workspace_id":"`+c.Tenant.Workspace.ID+`","fail":"our-error"}`)
	srv := asynq.NewServerFromRedisClient(c.P.Redis, asynq.Config{Queues: map[string]int{q: 1}, Concurrency: 1,
		LogLevel: asynq.FatalLevel, HealthCheckInterval: time.Hour})
	mux := asynq.NewServeMux()
	mux.HandleFunc(kindFail, func(_ context.Context, task *asynq.Task) error {
		var p struct{ Fail string }
		_ = json.Unmarshal(task.Payload(), &p)
		return fmt.Errorf("upstream said %s (from the receiver)", p.Fail)
	})
	require.NoError(t, srv.Start(mux))
	insp := asynq.NewInspectorFromRedisClient(c.P.Redis)
	require.Eventually(t, func() bool {
		qi, err := insp.GetQueueInfo(q)
		return err == nil && qi.Archived == 3
	}, 30*time.Second, 50*time.Millisecond)
	srv.Shutdown()

	cl := c.signedIn(t)
	list := cl.get("/queues?queue=" + url.QueryEscape(q) + "&state=archived")
	require.Equal(t, http.StatusOK, list.Status, list.Body)
	require.Contains(t, list.Body, "upstream said our-error (from the receiver)")
	require.NotContains(t, list.Body, "their-secret (from the receiver)")
	require.NotContains(t, list.Body, "ids-secret (from the receiver)")
	require.Equal(t, 2, strings.Count(list.Body, `class="muted hidden-error"`))
	for id, hidden := range map[string]bool{theirs: true, idsOnly: true, ours: false} {
		p := cl.get("/queues/" + q + "/tasks/" + id)
		require.Equal(t, http.StatusOK, p.Status)
		require.Equal(t, hidden, strings.Contains(p.Body, `id="error-hidden"`), id)
	}
	op := operatorView(t, c).signedIn(t)
	list = op.get("/queues?queue=" + url.QueryEscape(q) + "&state=archived")
	require.Contains(t, list.Body, "upstream said their-secret (from the receiver)", "an operator reads every job's error")
	require.Contains(t, list.Body, "upstream said ids-secret (from the receiver)")
}
