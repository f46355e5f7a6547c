package console_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/gofiber/fiber/v2"
	"github.com/stretchr/testify/require"

	"github.com/appruntime/appruntime/console"
	"github.com/appruntime/appruntime/internal/admin"
	"github.com/appruntime/appruntime/internal/bindingspec"
	"github.com/appruntime/appruntime/internal/bundle"
	"github.com/appruntime/appruntime/internal/config"
	"github.com/appruntime/appruntime/internal/demo"
	"github.com/appruntime/appruntime/internal/logging"
	"github.com/appruntime/appruntime/internal/platform"
	"github.com/appruntime/appruntime/internal/store"
	"github.com/appruntime/appruntime/internal/task"
	"github.com/appruntime/appruntime/internal/testkit"
	"github.com/appruntime/appruntime/internal/toolconfig"
	"github.com/appruntime/appruntime/internal/web"
	"github.com/appruntime/appruntime/models"
)

// testConsole is a real console server on a loopback port, on a schema and
// Redis prefix of the test's own, with a tenant whose admin signs in with
// testPassword.
type testConsole struct {
	URL    string
	P      *platform.Platform
	Store  *store.Store
	Tenant testkit.Tenant
}

// testPassword is testkit.NewTenant's admin password.
const testPassword = "correct horse battery"

// newTestConsole starts a console; opts adjust the configuration before the
// platform is built.
func newTestConsole(t *testing.T, opts ...func(*config.Config)) *testConsole {
	t.Helper()
	ln, err := web.Listen("127.0.0.1:0")
	require.NoError(t, err)
	c := &testConsole{URL: "http://" + ln.Addr().String()}
	cfg := testkit.Config(testkit.DatabaseURL(), testkit.RedisURL())
	cfg.ConsoleURL = c.URL
	for _, o := range opts {
		o(cfg)
	}
	c.P, c.Store = newPlatform(t, cfg)
	c.Tenant = testkit.NewTenant(t, c.Store.DB)
	serve(t, mustConsole(t, c.P), ln)
	return c
}

// newPlatform builds a platform on a schema and Redis environment of the test's own.
func newPlatform(t *testing.T, cfg *config.Config) (*platform.Platform, *store.Store) {
	t.Helper()
	st := testkit.Schema(t)
	return newPlatformOn(t, cfg, st), st
}

// newPlatformOn builds a platform on st (a SQLite store: the dev mode) and
// a Redis environment of the test's own.
func newPlatformOn(t *testing.T, cfg *config.Config, st *store.Store) *platform.Platform {
	t.Helper()
	rd := testkit.Redis(t)
	log := logging.New(io.Discard, slog.LevelError)
	if testing.Verbose() {
		log = logging.New(testWriter{t}, slog.LevelDebug)
	}
	p, err := platform.New(context.Background(), platform.Options{
		Config: cfg, Log: log, Store: st, Redis: rd.Client, KeyPrefix: rd.Prefix, Queues: rd.Queues,
	})
	require.NoError(t, err)
	t.Cleanup(p.Close)
	return p
}

func mustConsole(t *testing.T, p *platform.Platform) *fiber.App {
	t.Helper()
	app, err := console.New(p.ConsoleServices())
	require.NoError(t, err)
	return app
}

// serve runs app on ln until the test ends.
func serve(t *testing.T, app *fiber.App, ln net.Listener) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- web.Serve(ctx, app, ln, 2*time.Second) }()
	t.Cleanup(func() {
		cancel()
		<-done
	})
}

type testWriter struct{ t *testing.T }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Log(string(bytes.TrimSpace(p)))
	return len(p), nil
}

// client is a browser stand-in: a cookie jar, no automatic redirects, and
// the CSRF token of the last page it read.
type client struct {
	t    *testing.T
	base string
	http *http.Client
	csrf string
	// header is sent with every request (an X-Forwarded-For of the test's).
	header http.Header
}

// page is one reply.
type page struct {
	Status int
	Header http.Header
	Body   string
}

func (c *testConsole) client(t *testing.T) *client {
	t.Helper()
	jar, err := cookiejar.New(nil)
	require.NoError(t, err)
	return &client{t: t, base: c.URL, http: &http.Client{
		Jar:           jar,
		Timeout:       30 * time.Second,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}}
}

var csrfInput = regexp.MustCompile(`name="csrf" value="([^"]+)"`)

func (cl *client) do(req *http.Request) page {
	cl.t.Helper()
	for k, v := range cl.header {
		req.Header[k] = v
	}
	res, err := cl.http.Do(req)
	require.NoError(cl.t, err)
	defer res.Body.Close()
	raw, err := io.ReadAll(res.Body)
	require.NoError(cl.t, err)
	p := page{Status: res.StatusCode, Header: res.Header, Body: string(raw)}
	if m := csrfInput.FindStringSubmatch(p.Body); m != nil {
		cl.csrf = m[1]
	}
	return p
}

// get fetches path.
func (cl *client) get(path string) page {
	cl.t.Helper()
	req, err := http.NewRequest(http.MethodGet, cl.base+path, nil)
	require.NoError(cl.t, err)
	return cl.do(req)
}

// post submits form to path, with the CSRF token of the last page read
// unless form sets its own "csrf" (present, even empty, it is sent as is).
func (cl *client) post(path string, form url.Values) page {
	cl.t.Helper()
	if form == nil {
		form = url.Values{}
	}
	if _, own := form["csrf"]; !own {
		form.Set("csrf", cl.csrf)
	}
	req, err := http.NewRequest(http.MethodPost, cl.base+path, strings.NewReader(form.Encode()))
	require.NoError(cl.t, err)
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	return cl.do(req)
}

// login signs in through the form and reports the reply to the post.
func (cl *client) login(email, password string) page {
	cl.t.Helper()
	p := cl.get("/login")
	require.Equal(cl.t, http.StatusOK, p.Status, p.Body)
	return cl.post("/login", url.Values{"email": {email}, "password": {password}})
}

// signedIn returns a client signed in as the tenant's admin.
func (c *testConsole) signedIn(t *testing.T) *client {
	t.Helper()
	cl := c.client(t)
	p := cl.login(c.Tenant.Admin.Email, testPassword)
	require.Equal(t, http.StatusSeeOther, p.Status, p.Body)
	require.Equal(t, "/", p.Header.Get("Location"))
	home := cl.get("/")
	require.Equal(t, http.StatusOK, home.Status, home.Body)
	return cl
}

// fixture is the demo's objects in the tenant's workspace, built through
// the domain services: a Postgres data source with invoices, its
// integration, the demo binding, the demo bundle, an app tool that parks its
// task, and a task parked on one app-tool step.
type fixture struct {
	Source        *store.Store
	IntegrationID string
	BindingID     string
	BundleID      string
	ToolID        string
	TaskID        string
	StepID        string
	AwaitID       string
	ReviewerEmail string
}

// seedDemo builds the fixture in c's tenant.
func seedDemo(t *testing.T, p *platform.Platform, tn testkit.Tenant) fixture {
	t.Helper()
	ctx := context.Background()
	ws, actor := tn.Workspace.ID, "user:"+tn.Admin.ID
	f := fixture{Source: testkit.DataSource(t)}
	for _, stmt := range []string{
		`CREATE TABLE invoices (id integer PRIMARY KEY, vendor text NOT NULL, amount numeric(12,2) NOT NULL, status text NOT NULL)`,
		`CREATE TABLE decisions (id serial PRIMARY KEY, task_id text NOT NULL, decision text NOT NULL, note text)`,
		`INSERT INTO invoices VALUES (1,'ACME Corp',1250.00,'pending'),(2,'ACME Corp',89.90,'pending'),(3,'Globex',4310.50,'pending')`,
	} {
		require.NoError(t, f.Source.DB.Exec(stmt).Error)
	}
	dsn, err := json.Marshal(testkit.URLOf(f.Source))
	require.NoError(t, err)
	integ, err := p.Admin.CreateIntegration(ctx, ws, actor, admin.IntegrationInput{
		Name: "Invoices database", Kind: admin.KindPostgres, Secrets: map[string]json.RawMessage{"dsn": dsn},
	})
	require.NoError(t, err)
	f.IntegrationID = integ.ID

	spec, err := json.Marshal(demo.Spec())
	require.NoError(t, err)
	b, err := p.Bindings.Create(ctx, ws, actor, bindingspec.Input{
		Name: "Invoice review binding", BindingKind: bindingspec.KindPostgres, IntegrationID: integ.ID, AllowedOperations: spec,
	})
	require.NoError(t, err)
	f.BindingID = b.ID

	html := demo.BundleHTML(p.Config.PublicAPIURL)
	bv, err := p.Bundles.Create(ctx, ws, actor, bundle.Upload{Name: "invoice-review", ContentType: "text/html", Content: html})
	require.NoError(t, err)
	f.BundleID = bv.ID

	tool, err := p.Tools.Create(ctx, ws, actor, toolconfig.Input{
		AgentID: tn.Agent.ID, DisplayName: "Invoice review", BaseTool: models.BaseAppTool,
		BundleID: &bv.ID, BindingID: &b.ID, AwaitReview: true,
		Theme:        json.RawMessage(`{"accent":"#2456d6"}`),
		ActionSchema: json.RawMessage(`{"approve_invoice":{"label":"Approve and resume"}}`),
		InputSchema:  json.RawMessage(`{"type":"object","properties":{"report_id":{"type":"integer"}},"additionalProperties":false}`),
	})
	require.NoError(t, err)
	f.ToolID = tool.ID

	caller := task.Caller{WorkspaceID: ws, AgentID: tn.Agent.ID, Actor: "agent:" + tn.Agent.ID}
	tk, err := p.Tasks.Create(ctx, caller, task.TaskInput{Title: "Review the ACME invoices"})
	require.NoError(t, err)
	f.TaskID = tk.ID
	step, err := p.Tasks.AddAppToolStep(ctx, caller, tk.ID, task.StepInput{ConfiguredToolID: tool.ID, Params: json.RawMessage(`{"report_id":59137}`)})
	require.NoError(t, err)
	f.StepID = step.ID
	var art task.Artifact
	require.NoError(t, json.Unmarshal(step.Output, &art))
	require.NotEmpty(t, art.AwaitID, "the app tool awaits review, so the step parks the task")
	f.AwaitID = art.AwaitID

	rv, err := p.Admin.CreateUser(ctx, ws, actor, admin.UserInput{Email: "reviewer-" + ws[:8] + "@example.test", Name: "Rita Reviewer", Role: models.RoleReviewer, Password: testPassword})
	require.NoError(t, err)
	f.ReviewerEmail = rv.Email
	return f
}

// auditCount counts the workspace's audit entries of action on target.
func auditCount(t *testing.T, st *store.Store, workspaceID, action, targetID string) int64 {
	t.Helper()
	var n int64
	require.NoError(t, st.DB.Model(&models.AuditEntry{}).
		Where("workspace_id = ? AND action = ? AND target_id = ?", workspaceID, action, targetID).Count(&n).Error)
	return n
}
