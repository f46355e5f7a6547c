package console

import (
	"bytes"
	"embed"
	"encoding/json"
	"fmt"
	"html/template"
	"io/fs"
	"strconv"
	"strings"
	"time"

	"github.com/gofiber/fiber/v2"

	"github.com/appruntime/appruntime/internal/apperr"
	"github.com/appruntime/appruntime/internal/web"
)

//go:embed templates/*.html
var templateFS embed.FS

//go:embed static
var staticFS embed.FS

// layoutFile is the shared layout every page is rendered in.
const layoutFile = "templates/layout.html"

// partialFiles define templates that several pages include.
var partialFiles = []string{"templates/app_host.html", "templates/ids.html", "templates/form_refusal.html"}

// pageNames are the pages the console renders, each templates/<name>.html.
// New fails when one is missing or does not parse.
var pageNames = []string{
	"login", "error", "overview",
	"bindings", "binding", "binding_versions",
	"tools", "tool", "bundles", "bundle", "bundle_preview", "integrations", "integration", "tool_form", "agents", "users",
	"agent", "agent_secret", "user", "user_password", "review_pools",
	"tokens", "token_issued",
	"tasks", "task", "artifact", "agent_tools",
	"sessions", "audit", "queues", "queue_task", "queue_bulk", "webhooks",
	"review", "review_task",
}

// pages holds every page template, each parsed with the layout.
type pages struct {
	byName map[string]*template.Template
}

// parsePages parses the layout with each page of pageNames from fsys.
func parsePages(fsys fs.FS) (*pages, error) {
	layout, err := fs.ReadFile(fsys, layoutFile)
	if err != nil {
		return nil, fmt.Errorf("console: layout template: %w", err)
	}
	base, err := template.New("layout").Funcs(templateFuncs).Parse(string(layout))
	if err != nil {
		return nil, fmt.Errorf("console: parse %s: %w", layoutFile, err)
	}
	for _, file := range partialFiles {
		src, err := fs.ReadFile(fsys, file)
		if err != nil {
			return nil, fmt.Errorf("console: partial: %w", err)
		}
		if _, err := base.Parse(string(src)); err != nil {
			return nil, fmt.Errorf("console: parse %s: %w", file, err)
		}
	}
	p := &pages{byName: make(map[string]*template.Template, len(pageNames))}
	for _, name := range pageNames {
		file := "templates/" + name + ".html"
		src, err := fs.ReadFile(fsys, file)
		if err != nil {
			return nil, fmt.Errorf("console: page %q: %w", name, err)
		}
		t, err := template.Must(base.Clone()).Parse(string(src))
		if err != nil {
			return nil, fmt.Errorf("console: parse %s: %w", file, err)
		}
		if t.Lookup("content") == nil {
			return nil, fmt.Errorf("console: %s defines no \"content\" template", file)
		}
		p.byName[name] = t
	}
	return p, nil
}

// view is what every page template receives.
type view struct {
	Title string
	// Section is the navigation entry to highlight.
	Section string
	Admin   *signedAdmin
	CSRF    string
	Notice  string
	// Error is a message shown above the page's content (a refused form).
	Error string
	Data  any
}

// notices are the messages a redirect after a change may ask for with
// ?notice=, so that no text from the URL is ever shown.
var notices = map[string]string{
	"saved":               "Saved as a new version.",
	"restored":            "Restored: the old content was saved as a new version.",
	"released":            "The await was released: the resume event is queued and the agent will run again.",
	"aborted":             "The await was aborted and the task marked failed. The agent was not resumed.",
	"revoked":             "Revoked.",
	"token_revoked":       "Token revoked: it no longer authenticates.",
	"signed_out":          "You have signed out.",
	"tool_saved":          "The tool was saved.",
	"tool_deleted":        "The tool was deleted; its past calls stay in the feeds.",
	"answered":            "The card was answered: the resume event is queued and the agent will run again.",
	"button_failed":       "The button's target failed: the task stays parked, and the error is shown on the card.",
	"message_sent":        "Your message was sent to the agent.",
	"review_aborted":      "The task is back in the queue for whoever asks next.",
	"queue_paused":        "Queue paused: its tasks stay pending until it is resumed.",
	"queue_resumed":       "Queue resumed: its pending tasks are handed out again.",
	"task_run":            "The task is pending again and runs next.",
	"task_archived":       "Task archived.",
	"task_deleted":        "Task deleted.",
	"task_canceled":       "Cancellation sent to the worker running the task.",
	"redelivering":        "Redelivery queued: the new attempt shows here once the worker made it.",
	"agent_saved":         "The agent was saved.",
	"agent_deleted":       "The agent was deleted with its tasks, tools and tokens.",
	"user_created":        "The user was created with the password you typed.",
	"user_saved":          "The user was saved.",
	"password_reset":      "The password was replaced with the one you typed.",
	"user_deleted":        "The user was deleted: their tokens and app sessions no longer work.",
	"review_pool_saved":   "The review pool was saved: tasks parked from now on follow it.",
	"review_pool_deleted": "The review pool was deleted: its tasks go to their other pools, or to anyone.",
	"claim_limit_saved":   "The claim limit was saved.",
	"integration_saved":   "The integration was saved; calls use it from the next one on.",
	"integration_deleted": "The integration was deleted.",
	"uploaded":            "New version uploaded: tools pinned to an older version keep it.",
	"grant_approve":       "Network grants approved: the version is served with its declared origins from its next load.",
	"grant_refuse":        "Network grants refused: the version keeps the default policy.",
	"grant_withdraw":      "Approval withdrawn: the version is served with the default policy from its next load.",
}

// render writes page name with data and status. The page is rendered to a
// buffer first, so that a template error becomes an error page, not half a page.
func (s *server) render(c *fiber.Ctx, status int, name, title, section string, data any) error {
	return s.renderView(c, status, name, view{Title: title, Section: section, Data: data})
}

// renderView fills in what every page shows (the admin, the CSRF token, a
// notice) and renders v.
func (s *server) renderView(c *fiber.Ctx, status int, name string, v view) error {
	t, ok := s.pages.byName[name]
	if !ok {
		return fmt.Errorf("console: no page %q", name)
	}
	if a, ok := c.Locals(localAdmin).(signedAdmin); ok {
		v.Admin = &a
	}
	if cs, ok := sessionOf(c); ok {
		v.CSRF = s.csrfToken(cs)
	}
	if v.Notice == "" {
		v.Notice = notices[c.Query("notice")]
	}
	var buf bytes.Buffer
	if err := t.ExecuteTemplate(&buf, "layout", v); err != nil {
		return fmt.Errorf("console: render %s: %w", name, err)
	}
	c.Set(fiber.HeaderContentType, fiber.MIMETextHTMLCharsetUTF8)
	return c.Status(status).Send(buf.Bytes())
}

// errorPage is the error page's data.
type errorPage struct {
	Status  int
	Message string
}

// renderError is the console's error handler: an error page with the status
// and the apperr message; internal errors are logged and shown as a generic
// message.
func (s *server) renderError(c *fiber.Ctx, err error) error {
	err = web.FromFiber(err)
	code, status, msg := apperr.Public(err)
	if code == apperr.Internal {
		s.Log.ErrorContext(c.UserContext(), "console request failed", "error", err.Error(), "path", c.Path())
		msg = "Something went wrong on our side. It has been logged; try again in a moment."
	}
	c.Set(fiber.HeaderCacheControl, "no-store")
	if code == apperr.Unavailable {
		c.Set(fiber.HeaderRetryAfter, strconv.Itoa(max(apperr.RetryAfterSeconds(err), web.UnavailableRetryAfter)))
	}
	// The host script's calls (review-host.js: translation, sessions,
	// citations) ask for JSON and read {"error": message} on a refusal.
	if strings.Contains(c.Get(fiber.HeaderAccept), fiber.MIMEApplicationJSON) {
		return c.Status(status).JSON(fiber.Map{"error": msg})
	}
	rerr := s.renderView(c, status, "error", view{Title: "Error " + strconv.Itoa(status), Data: errorPage{Status: status, Message: msg}})
	if rerr != nil {
		s.Log.ErrorContext(c.UserContext(), "console error page failed", "error", rerr.Error())
		return c.Status(status).SendString(msg)
	}
	return nil
}

// redirectTo answers a form post with 303 See Other to path, carrying a notice.
func redirectTo(c *fiber.Ctx, path, notice string) error {
	if notice != "" {
		sep := "?"
		if strings.Contains(path, "?") {
			sep = "&"
		}
		path += sep + "notice=" + notice
	}
	return c.Redirect(path, fiber.StatusSeeOther)
}

// templateFuncs are the helpers templates use to show times, ids and JSON.
var templateFuncs = template.FuncMap{
	"when":       when,
	"whenPtr":    whenPtr,
	"ago":        ago,
	"short":      shortID,
	"json":       prettyJSON,
	"deref":      deref,
	"actor":      actorName,
	"objectHref": objectHref,
	"add":        func(a, b int) int { return a + b },
	"join":       strings.Join,
}

// when shows a time in UTC to the second.
func when(t time.Time) string {
	if t.IsZero() {
		return "—"
	}
	return t.UTC().Format("2006-01-02 15:04:05 UTC")
}

func whenPtr(t *time.Time) string {
	if t == nil {
		return "—"
	}
	return when(*t)
}

// ago shows how long ago t was, to the two largest units ("3d 4h", "12m").
func ago(t any) string {
	var at time.Time
	switch v := t.(type) {
	case time.Time:
		at = v
	case *time.Time:
		if v == nil {
			return "—"
		}
		at = *v
	default:
		return "—"
	}
	return age(time.Since(at))
}

func age(d time.Duration) string {
	if d < time.Minute {
		return "<1m"
	}
	days := int(d / (24 * time.Hour))
	hours := int(d % (24 * time.Hour) / time.Hour)
	minutes := int(d % time.Hour / time.Minute)
	switch {
	case days > 0:
		return fmt.Sprintf("%dd %dh", days, hours)
	case hours > 0:
		return fmt.Sprintf("%dh %dm", hours, minutes)
	default:
		return fmt.Sprintf("%dm", minutes)
	}
}

// shortID shows the last block of a UUID, its most random part (our ids
// are version 7: the first blocks are a timestamp, alike for ids made
// together); the full id is in the link or the title.
func shortID(id string) string {
	if i := strings.LastIndexByte(id, '-'); i >= 0 && i+1 < len(id) {
		return id[i+1:]
	}
	return id
}

// prettyJSON indents a JSON document (or marshals a value) for display.
func prettyJSON(v any) string {
	var raw []byte
	switch j := v.(type) {
	case json.RawMessage:
		raw = j
	case []byte:
		raw = j
	default:
		b, err := json.Marshal(v)
		if err != nil {
			return fmt.Sprintf("%v", v)
		}
		raw = b
	}
	if len(bytes.TrimSpace(raw)) == 0 {
		return "null"
	}
	var out bytes.Buffer
	if err := json.Indent(&out, raw, "", "  "); err != nil {
		return string(raw)
	}
	return out.String()
}

// actorName shows an actor ("user:<id>", "agent:<id>", "system") by the
// name names gives it, or as it is.
func actorName(names map[string]string, actor string) string {
	if n, ok := names[actor]; ok && n != "" {
		return n
	}
	return actor
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}
