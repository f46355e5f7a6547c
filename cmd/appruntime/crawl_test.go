package main_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"

	"github.com/appruntime/appruntime/internal/openapi"
	"github.com/appruntime/appruntime/internal/store"
	"github.com/appruntime/appruntime/internal/testkit"
	"github.com/appruntime/appruntime/internal/testkit/browser"
	"github.com/appruntime/appruntime/models"
)

// TestDevModeCrawl starts appruntime dev on its embedded defaults (SQLite
// and the in-process Redis) and on Postgres, stores key details of every JSON
// kind on the demo task (what the summary pass writes), then signs in to the
// console as the admin and as a reviewer and follows every link of every
// page it reaches from the overview, and calls every GET route of the
// OpenAPI document with the demo's real ids: no 5xx, no broken link.
func TestDevModeCrawl(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("starts the whole product")
	}
	for _, dialect := range []string{"sqlite", "postgres"} {
		t.Run(dialect, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			apiAddr, consoleAddr := freeAddr(t), freeAddr(t)
			env := baseEnv("API_ADDR="+apiAddr, "CONSOLE_ADDR="+consoleAddr)
			dbURL := "sqlite:" + filepath.Join(dir, ".appruntime", "dev.db")
			if dialect == "postgres" {
				dbURL = testkit.SchemaURL(t)
				env = append(env, "DATABASE_URL="+dbURL)
			}
			p := start(t, dir, env, "dev")
			res := waitHTTP(t, p, "http://"+apiAddr+"/readyz", 90*time.Second)
			res.Body.Close()
			waitHTTP(t, p, "http://"+consoleAddr+"/readyz", 10*time.Second).Body.Close()
			info := readDevInfo(t, dir)
			storeKeyDetails(t, dbURL, info)
			reviewer := addReviewer(t, info)

			for _, role := range []struct{ name, email, password string }{
				{"admin", info.AdminEmail, info.AdminPassword},
				{"reviewer", reviewer, reviewerPassword},
			} {
				crawl := crawlConsole(t, info.ConsoleURL, role.email, role.password)
				t.Logf("crawl %s %s: pages=%d failures=%d", dialect, role.name, crawl.visited, len(crawl.failures))
				require.Empty(t, crawl.failures, "%s on %s", role.name, dialect)
				shown, errs := browseConsole(t, info.ConsoleURL, role.email, role.password, crawl.pages)
				t.Logf("crawl %s %s in Chromium: pages=%d console_errors=%d", dialect, role.name, shown, len(errs))
				require.Empty(t, errs, "%s on %s: the browser's console", role.name, dialect)
			}
			routes, failures := callOpenAPIGets(t, info)
			t.Logf("crawl %s api: routes=%d failures=%d", dialect, routes, len(failures))
			require.Empty(t, failures, dialect)
			require.NotContains(t, p.stderr.String(), `"level":"ERROR"`, "no error logged during the crawl")
			_, err := p.stop(t)
			require.NoError(t, err, p.stderr.String())
		})
	}
}

// devJSON is what the crawl reads of .appruntime/dev.json.
type devJSON struct {
	APIURL        string `json:"api_url"`
	ConsoleURL    string `json:"console_url"`
	AdminEmail    string `json:"admin_email"`
	AdminPassword string `json:"admin_password"`
	HostToken     string `json:"host_token"`
	AgentToken    string `json:"agent_token"`
	AdminToken    string `json:"admin_token"`
	WorkspaceID   string `json:"workspace_id"`
	AgentID       string `json:"agent_id"`
	BundleID      string `json:"bundle_id"`
	TaskID        string `json:"task_id"`
	StepID        string `json:"step_id"`
}

func readDevInfo(t *testing.T, dir string) devJSON {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(dir, ".appruntime", "dev.json"))
	require.NoError(t, err)
	var info devJSON
	require.NoError(t, json.Unmarshal(raw, &info))
	return info
}

// storeKeyDetails gives the demo task key details of every JSON kind, as the
// summary pass stores them (a bare number once made the task's pages 500).
func storeKeyDetails(t *testing.T, dbURL string, info devJSON) {
	t.Helper()
	st, err := store.Open(context.Background(), dbURL, store.Options{MaxOpenConns: 1})
	require.NoError(t, err)
	defer st.Close()
	for key, v := range map[string]string{"total_amount": `1234.5`, "line_count": `3`, "vendor": `"ACME Corp"`,
		"urgent": `true`, "address": `{"city": "Lyon", "lines": ["1 rue A", null]}`} {
		require.NoError(t, st.DB.Create(&models.AgentKeyValue{ID: models.NewID(), TaskID: info.TaskID, AgentID: info.AgentID,
			Key: key, Value: models.JSON(v)}).Error)
	}
}

const reviewerPassword = "correct horse battery staple"

// addReviewer creates a reviewer of the demo workspace through the admin API.
func addReviewer(t *testing.T, info devJSON) string {
	t.Helper()
	email := "reviewer@example.test"
	body := fmt.Sprintf(`{"email": %q, "name": "Rita Reviewer", "role": "reviewer", "password": %q}`, email, reviewerPassword)
	res := apiCall(t, "POST", info.APIURL+"/api/admin/users", info.AdminToken, body)
	require.Equal(t, 201, res.status, res.body)
	return email
}

type apiReply struct {
	status int
	body   string
}

func apiCall(t *testing.T, method, u, token, body string) apiReply {
	t.Helper()
	req, err := http.NewRequest(method, u, strings.NewReader(body))
	require.NoError(t, err)
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	res, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer res.Body.Close()
	raw, _ := io.ReadAll(res.Body)
	return apiReply{res.StatusCode, string(raw)}
}

var (
	hrefAttr  = regexp.MustCompile(`(?i)\s(?:href|src)="([^"#]*)`)
	csrfInput = regexp.MustCompile(`name="csrf" value="([^"]+)"`)
)

// consoleCrawl is what crawlConsole found: how many links it followed, the
// HTML pages among them (request URIs, in the order visited), and one line
// per failure.
type consoleCrawl struct {
	visited  int
	pages    []string
	failures []string
}

// crawlConsole signs in and visits every same-origin link (href and src) of
// every page reached, breadth first from the landing page; a failure is a
// 5xx, a 404, a 403 (a link shown to someone who may not follow it), or a
// page that failed to load.
func crawlConsole(t *testing.T, base, email, password string) consoleCrawl {
	t.Helper()
	jar, err := cookiejar.New(nil)
	require.NoError(t, err)
	client := &http.Client{Jar: jar, Timeout: 30 * time.Second}
	res, err := client.Get(base + "/login")
	require.NoError(t, err)
	raw, _ := io.ReadAll(res.Body)
	res.Body.Close()
	m := csrfInput.FindSubmatch(raw)
	require.NotNil(t, m, "the login form carries a csrf field")
	res, err = client.PostForm(base+"/login", url.Values{"csrf": {string(m[1])}, "email": {email}, "password": {password}, "next": {"/"}})
	require.NoError(t, err)
	landing, _ := io.ReadAll(res.Body)
	res.Body.Close()
	require.Equal(t, 200, res.StatusCode, "sign-in as %s lands on a page\n%s", email, landing)
	require.NotContains(t, res.Request.URL.Path, "/login", "signed in")

	origin, err := url.Parse(base)
	require.NoError(t, err)
	seen := map[string]bool{res.Request.URL.RequestURI(): true}
	queue := []string{res.Request.URL.RequestURI()}
	var failures, pages []string
	const maxPages = 600
	for len(queue) > 0 && len(seen) <= maxPages {
		page := queue[0]
		queue = queue[1:]
		res, err := client.Get(base + page)
		if err != nil {
			failures = append(failures, page+": "+err.Error())
			continue
		}
		body, _ := io.ReadAll(res.Body)
		res.Body.Close()
		if res.StatusCode >= 500 || res.StatusCode == 404 || res.StatusCode == 403 {
			failures = append(failures, fmt.Sprintf("%s: %d", page, res.StatusCode))
			continue
		}
		if !strings.HasPrefix(res.Header.Get("Content-Type"), "text/html") {
			continue
		}
		pages = append(pages, page)
		for _, l := range hrefAttr.FindAllSubmatch(body, -1) {
			link, err := res.Request.URL.Parse(htmlUnescape(string(l[1])))
			if err != nil || link.Host != origin.Host || skipLink(link.Path) {
				continue
			}
			if uri := link.RequestURI(); !seen[uri] {
				seen[uri] = true
				queue = append(queue, uri)
			}
		}
	}
	require.Less(t, len(seen), maxPages, "the crawl stays bounded")
	sort.Strings(failures)
	return consoleCrawl{visited: len(seen), pages: pages, failures: failures}
}

// browseConsole signs in through the login form in Chromium and opens one
// page of each kind the HTTP crawl found (kinds by pagePattern), waiting for
// each to finish loading. It returns the number of pages shown and one line
// per error the browser's console logged: an uncaught exception, a
// console.error, or a browser log entry at error level (a resource that
// failed to load, a Content-Security-Policy violation).
func browseConsole(t *testing.T, base, email, password string, pages []string) (int, []string) {
	t.Helper()
	ctx := browser.New(t)
	listening, stopListening := context.WithCancel(ctx)
	defer stopListening()
	messages := chromedp.Console(listening)
	var (
		mu      sync.Mutex
		current = "/login"
		errs    []string
	)
	collected := make(chan struct{})
	go func() {
		defer close(collected)
		for m, err := range messages {
			if err != nil {
				return
			}
			if m.Type == chromedp.ConsoleError || m.IsException() {
				mu.Lock()
				errs = append(errs, fmt.Sprintf("%s: %s (%s)", current, m, m.URL))
				mu.Unlock()
			}
		}
	}()
	at := func(page string) {
		mu.Lock()
		current = page
		mu.Unlock()
	}
	loaded := browser.Poll(`document.readyState === "complete"`, 20*time.Second)
	require.NoError(t, chromedp.Do(ctx,
		chromedp.Navigate(base+"/login"),
		chromedp.WaitVisible(chromedp.CSS(`input[name="email"]`)),
		chromedp.SendKeys(chromedp.CSS(`input[name="email"]`), email),
		chromedp.SendKeys(chromedp.CSS(`input[name="password"]`), password),
		chromedp.Click(chromedp.CSS(`form button[type="submit"]`)),
		chromedp.WaitVisible(chromedp.CSS(`form.signout`)),
	), "sign in as %s in Chromium", email)

	kinds := map[string]bool{}
	shown := 0
	for _, page := range pages {
		kind := pagePattern(page)
		if kinds[kind] {
			continue
		}
		kinds[kind] = true
		at(page)
		if err := chromedp.Do(ctx, chromedp.Navigate(base+page), loaded); err != nil {
			mu.Lock()
			errs = append(errs, page+": "+err.Error())
			mu.Unlock()
			continue
		}
		shown++
	}
	// A last page, so that what the previous one logged while it unloaded is
	// read before the subscription ends.
	at("(after the last page)")
	require.NoError(t, chromedp.Do(ctx, chromedp.Navigate("about:blank")))
	stopListening()
	<-collected
	mu.Lock()
	defer mu.Unlock()
	sort.Strings(errs)
	return shown, errs
}

var idSegment = regexp.MustCompile(`^(?:[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}|[0-9]+)$`)

// pagePattern is the kind of a page: its path with ids (and version
// numbers) as {id}, and its sorted query keys. /tasks/<uuid>?tab=x and
// /tasks/<uuid>?tab=y are one kind; /tasks and /tasks?status=x are two.
func pagePattern(uri string) string {
	u, err := url.Parse(uri)
	if err != nil {
		return uri
	}
	segs := strings.Split(u.Path, "/")
	for i, s := range segs {
		if idSegment.MatchString(s) {
			segs[i] = "{id}"
		}
	}
	keys := make([]string, 0, len(u.Query()))
	for k := range u.Query() {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return strings.Join(segs, "/") + "?" + strings.Join(keys, "&")
}

// skipLink leaves out what a GET would change or end: signing out.
func skipLink(path string) bool { return path == "/logout" }

func htmlUnescape(s string) string { return strings.ReplaceAll(s, "&amp;", "&") }

var pathParam = regexp.MustCompile(`\{([a-z_]+)\}`)

// callOpenAPIGets calls every GET route of the OpenAPI document, its path
// parameters filled with real ids: the demo's task, step and bundle, and for
// an admin resource the first item its own list route answers. Admin routes
// go with the admin token, agent routes with the agent's, the others with the
// host token. It returns the number of routes called and one line per 5xx
// (or a 4xx where the ids are real and the token is the route's own).
func callOpenAPIGets(t *testing.T, info devJSON) (int, []string) {
	t.Helper()
	var doc struct {
		Paths map[string]map[string]json.RawMessage `json:"paths"`
	}
	require.NoError(t, json.Unmarshal(openapi.Document, &doc))
	var paths []string
	for p, ops := range doc.Paths {
		if _, ok := ops["get"]; ok {
			paths = append(paths, p)
		}
	}
	sort.Strings(paths)
	require.NotEmpty(t, paths)
	var failures []string
	for _, route := range paths {
		token := info.HostToken
		switch {
		case strings.HasPrefix(route, "/api/admin/"):
			token = info.AdminToken
		case strings.HasPrefix(route, "/api/agent/"), route == "/mcp":
			token = info.AgentToken
		}
		known := true
		filled := pathParam.ReplaceAllStringFunc(route, func(param string) string {
			id := idFor(t, info, route, param)
			if id == "" {
				known = false
				return models.NewID()
			}
			return id
		})
		res := apiCall(t, "GET", info.APIURL+filled, token, "")
		switch {
		case res.status >= 500:
			failures = append(failures, fmt.Sprintf("GET %s: %d %s", filled, res.status, res.body))
		case route == "/mcp" && res.status == 405:
			// The MCP server is stateless: a GET, with the agent's token,
			// is its documented 405 (docs/agent-platforms.md#connect-an-agent-over-mcp).
		case known && res.status >= 400 && route != "/api/admin/workspaces":
			failures = append(failures, fmt.Sprintf("GET %s: %d %s", filled, res.status, res.body))
		}
	}
	return len(paths), failures
}

// idFor returns a real id for the path parameter param of route, or "" when
// the demo holds none (an uploaded file, an asset).
func idFor(t *testing.T, info devJSON, route, param string) string {
	t.Helper()
	prefix := route[:strings.Index(route, param)]
	switch {
	case param == "{version}":
		return "1"
	case param == "{agent_id}":
		return info.AgentID
	case strings.HasPrefix(prefix, "/bundles/"):
		return info.BundleID
	case strings.HasPrefix(prefix, "/api/tasks/"), strings.HasPrefix(prefix, "/api/agent/tasks/"):
		return info.TaskID
	case prefix == "/api/admin/workspaces/":
		return info.WorkspaceID
	case strings.HasPrefix(prefix, "/api/admin/"):
		list := strings.ReplaceAll(strings.TrimSuffix(prefix, "/"), "{agent_id}", info.AgentID)
		res := apiCall(t, "GET", info.APIURL+list, info.AdminToken, "")
		require.Equal(t, 200, res.status, "GET %s: %s", list, res.body)
		return firstID(res.body)
	}
	return ""
}

// firstID is the id of the first item of a list reply: a JSON array, or the
// first array an object holds.
func firstID(body string) string {
	var v any
	if json.NewDecoder(bytes.NewReader([]byte(body))).Decode(&v) != nil {
		return ""
	}
	if obj, ok := v.(map[string]any); ok {
		for _, f := range obj {
			if arr, ok := f.([]any); ok {
				v = arr
				break
			}
		}
	}
	arr, ok := v.([]any)
	if !ok || len(arr) == 0 {
		return ""
	}
	item, _ := arr[0].(map[string]any)
	id, _ := item["id"].(string)
	return id
}

// TestDevMigratesAnOlderDevDirectoryAndSaysSo starts dev on a .appruntime/
// an older version left (schema 10: no intent batches yet), with its data.
func TestDevMigratesAnOlderDevDirectoryAndSaysSo(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("starts the whole product")
	}
	dir := t.TempDir()
	apiAddr := freeAddr(t)
	env := baseEnv("API_ADDR="+apiAddr, "CONSOLE_ADDR="+freeAddr(t))
	p := start(t, dir, env, "dev")
	waitHTTP(t, p, "http://"+apiAddr+"/readyz", 90*time.Second).Body.Close()
	require.NotContains(t, p.stdout.String(), "Migrated", "a fresh start has nothing to migrate")
	_, err := p.stop(t)
	require.NoError(t, err, p.stderr.String())
	info := readDevInfo(t, dir)

	dbURL := "sqlite:" + filepath.Join(dir, ".appruntime", "dev.db")
	st, err := store.Open(context.Background(), dbURL, store.Options{})
	require.NoError(t, err)
	for _, q := range []string{`DROP TABLE write_intent_batches`, `ALTER TABLE feed_events DROP COLUMN intent_id`,
		`DROP INDEX outbox_owed`, `ALTER TABLE outbox DROP COLUMN due_at`, `ALTER TABLE outbox DROP COLUMN done_at`,
		`ALTER TABLE webhook_deliveries DROP COLUMN next_attempt_at`, `ALTER TABLE outbox DROP COLUMN traceparent`,
		`DROP TABLE bundle_grants`,
		`DROP INDEX webhook_deliveries_event_type`, `ALTER TABLE webhook_deliveries DROP COLUMN event_type`, `ALTER TABLE agents DROP COLUMN webhook_events`,
		`DROP TABLE task_citations`, `DROP INDEX tasks_workspace_agent_created`, `DROP INDEX tool_calls_running`,
		`DROP TABLE review_pool_digests`, `DROP TABLE review_pool_notices`,
		`DROP TABLE task_review_pools`, `DROP TABLE agent_review_pools`, `DROP TABLE review_pool_members`, `DROP TABLE review_pools`,
		`ALTER TABLE workspaces DROP COLUMN review_claim_limit`,
		`DELETE FROM schema_migrations WHERE version > 10`} {
		require.NoError(t, st.DB.Exec(q).Error, q)
	}
	require.NoError(t, st.Close())

	p = start(t, dir, env, "dev")
	waitHTTP(t, p, "http://"+apiAddr+"/readyz", 90*time.Second).Body.Close()
	require.Contains(t, p.stdout.String(), "Migrated the dev database from an older version: schema 10 -> 26 (13 migrations applied)")
	res := apiCall(t, "GET", info.APIURL+"/api/agent/tasks/"+info.TaskID, info.AgentToken, "")
	require.Equal(t, 200, res.status, "the demo task is kept: %s", res.body)
	_, err = p.stop(t)
	require.NoError(t, err, p.stderr.String())

	p = start(t, dir, env, "dev")
	waitHTTP(t, p, "http://"+apiAddr+"/readyz", 90*time.Second).Body.Close()
	require.NotContains(t, p.stdout.String(), "Migrated", "the next start has nothing to migrate")
	_, err = p.stop(t)
	require.NoError(t, err, p.stderr.String())
}
