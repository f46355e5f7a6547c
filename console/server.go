package console

import (
	"errors"
	"fmt"
	"github.com/appruntime/appruntime/internal/capability"
	"io/fs"
	"log/slog"
	"net/http"
	"net/url"
	"strings"

	"github.com/gofiber/fiber/v2"
	"github.com/gofiber/fiber/v2/middleware/filesystem"
	"github.com/redis/go-redis/v9"

	"github.com/appruntime/appruntime/internal/admin"
	"github.com/appruntime/appruntime/internal/agentcall"
	"github.com/appruntime/appruntime/internal/appblock"
	"github.com/appruntime/appruntime/internal/artifact"
	"github.com/appruntime/appruntime/internal/binding"
	"github.com/appruntime/appruntime/internal/bundle"
	"github.com/appruntime/appruntime/internal/claim"
	"github.com/appruntime/appruntime/internal/config"
	"github.com/appruntime/appruntime/internal/limit"
	"github.com/appruntime/appruntime/internal/metrics"
	"github.com/appruntime/appruntime/internal/queue"
	"github.com/appruntime/appruntime/internal/reply"
	"github.com/appruntime/appruntime/internal/review"
	"github.com/appruntime/appruntime/internal/runtime"
	"github.com/appruntime/appruntime/internal/task"
	"github.com/appruntime/appruntime/internal/toolconfig"
	"github.com/appruntime/appruntime/internal/web"
)

// Services are what the console may touch: the domain services its pages
// call, its logger, the checks of /readyz, Redis for its own session and
// sign-in bookkeeping, and its settings. internal/platform builds them
// (Platform.ConsoleServices).
type Services struct {
	Log *slog.Logger
	// Health are the dependencies /readyz pings (database, Redis).
	Health []web.Check
	// Redis keeps ended console sessions and the sign-in throttle, under
	// KeyPrefix.
	Redis     redis.UniversalClient
	KeyPrefix string

	// ConsoleKey signs session cookies and CSRF tokens (Config.ConsoleKey).
	ConsoleKey []byte
	// ConsoleURL is where the console is served (https marks cookies Secure).
	ConsoleURL string
	// BundleBaseURL is where bundles are served; the artifact page frames
	// its origin.
	BundleBaseURL string

	// PublicAPIURL is where the API is served (the task page's app blocks).
	PublicAPIURL string
	// Runtime tries a binding's ops (the binding page).
	Runtime *runtime.Service
	// AgentCalls edits agent tools and lists tool calls.
	AgentCalls *agentcall.Service
	// Replies serves agents' assets.
	Replies *reply.Service
	// Admin administers workspaces, agents, users and tokens, checks
	// passwords and pages the audit log.
	Admin *admin.Service
	// Artifacts mints, lists and revokes app sessions.
	Artifacts *artifact.Minter
	// Bindings saves, shows and restores bindings.
	Bindings *binding.Service
	// Bundles lists bundle versions.
	Bundles *bundle.Service
	// Parked releases or aborts a parked task's await.
	Parked *review.Parked
	// Queue hands reviewers parked tasks (the review pages).
	Queue *claim.Queue
	// Capabilities reads a task's documents for the review viewer; nil
	// when the deployment keeps no files.
	Capabilities *capability.Service
	// Tasks lists and shows tasks.
	Tasks *task.Service
	// Tools lists configured tools.
	Tools *toolconfig.Service
	// JobQueues shows and steers the asynq queues (the Queues page).
	JobQueues *queue.Service
	// OperatorUserIDs are the users who may steer the queues
	// (Config.OperatorUserIDs): the queues serve every workspace, so a
	// workspace's admin may look but not pause or act on tasks.
	OperatorUserIDs []string
	// Resumes redelivers resume webhooks (the Webhooks page).
	Resumes *review.Resumer
	// Metrics records every page served; nil records nothing.
	Metrics *metrics.Metrics
	// Proxies are the hops whose X-Forwarded-For names a client
	// (Config.TrustedProxies): the sign-in throttle's address, the access
	// log's client.
	Proxies web.Proxies
}

// server is the console: its services, the parsed pages and the settings of
// its cookies and content security policy.
type server struct {
	Services
	pages *pages
	// cookieKey signs session cookies and CSRF tokens (Config.ConsoleKey).
	cookieKey []byte
	// secureCookies marks cookies Secure: the console is served over https.
	secureCookies bool
	// bundleOrigin is the origin bundles are served from, the one origin the
	// artifact page may frame; "" when BundleBaseURL has none.
	bundleOrigin string
	// signIns throttles sign-in tries per account and per client address.
	signIns *limit.SignInThrottle
}

// New returns the console app with every page mounted. It fails when a page
// template is missing or does not parse, or when the cookie key is missing.
func New(svc Services) (*fiber.App, error) {
	pg, err := parsePages(templateFS)
	if err != nil {
		return nil, err
	}
	if len(svc.ConsoleKey) < config.MinKeyBytes {
		return nil, errors.New("console: CONSOLE_SESSION_KEY is required (at least 32 bytes, base64)")
	}
	s := &server{
		Services:      svc,
		pages:         pg,
		cookieKey:     svc.ConsoleKey,
		secureCookies: strings.HasPrefix(svc.ConsoleURL, "https://"),
		bundleOrigin:  originOf(svc.BundleBaseURL),
		signIns:       limit.NewSignInThrottle(svc.Redis, svc.KeyPrefix),
	}
	app := web.NewApp(web.Options{Name: "console", Logger: svc.Log, ErrorHandler: s.renderError, Immutable: true, BodyLimitFunc: bodyLimit, Observe: svc.Metrics.HTTP("console"), Proxies: svc.Proxies})
	app.Use(securityHeaders)
	web.MountHealth(app, svc.Log, svc.Health...)
	web.MountFavicon(app)
	static, err := fs.Sub(staticFS, "static")
	if err != nil {
		return nil, fmt.Errorf("console: static files: %w", err)
	}
	// The MCP Apps host module of the task page (internal/appblock).
	mcphost, err := appblock.Static.ReadFile("static/mcphost.js")
	if err != nil {
		return nil, fmt.Errorf("console: mcphost.js: %w", err)
	}
	app.Get("/static/mcphost.js", func(c *fiber.Ctx) error {
		c.Set(fiber.HeaderContentType, "text/javascript; charset=utf-8")
		c.Set(fiber.HeaderCacheControl, fmt.Sprintf("public, max-age=%d", staticMaxAgeSeconds))
		return c.Send(mcphost)
	})
	app.Use("/static", filesystem.New(filesystem.Config{Root: http.FS(static), MaxAge: staticMaxAgeSeconds}))
	s.routes(app)
	return app, nil
}

// staticMaxAgeSeconds is how long browsers keep the CSS and the host script.
const staticMaxAgeSeconds = 3600

// routes mounts every page and action, one file each: the sign-in pages are
// open (with CSRF), everything else needs a signed-in admin.
func (s *server) routes(app *fiber.App) {
	app.Get(loginPath, s.loadSession, s.showLogin)
	app.Post(loginPath, s.loadSession, s.checkCSRF, s.login)
	app.Post("/logout", s.loadSession, s.checkCSRF, s.logout)

	s.reviewRoutes(app)

	g := app.Group("/", s.loadSession, s.checkCSRF, s.requireAdmin)
	g.Get("/", s.showOverview)

	g.Get("/bindings", s.listBindings)
	g.Get("/bindings/:id", s.showBinding)
	g.Post("/bindings/:id", s.saveBinding)
	g.Post("/bindings/:id/try", s.tryBinding)
	g.Get("/bindings/:id/versions", s.listBindingVersions)
	g.Post("/bindings/:id/versions/:version/restore", s.restoreBindingVersion)

	g.Get("/tools", s.listTools)
	g.Get("/tools/new", s.newTool)
	g.Post("/tools", s.createTool)
	g.Get("/tools/:id", s.showTool)
	g.Get("/tools/:id/edit", s.editTool)
	g.Post("/tools/:id", s.saveTool)
	g.Post("/tools/:id/delete", s.deleteTool)
	g.Get("/bundles", s.listBundles)
	g.Get("/bundles/:id", s.showBundle)
	g.Post("/bundles/:id/versions", s.uploadBundleVersion)
	g.Get("/bundles/:id/versions/:version/preview", s.previewBundleVersion)
	g.Post("/bundles/:id/versions/:version/preview", s.mintBundlePreview)
	g.Post("/bundles/:id/versions/:version/grants/:decision", s.decideBundleGrant)
	g.Get("/integrations", s.listIntegrations)
	g.Get("/integrations/new", s.newIntegration)
	g.Post("/integrations", s.createIntegration)
	g.Get("/integrations/:id", s.editIntegration)
	g.Post("/integrations/:id", s.saveIntegration)
	g.Post("/integrations/:id/delete", s.deleteIntegration)
	g.Post("/integrations/:id/test", s.testIntegration)
	g.Get("/agents", s.listAgents)
	g.Post("/agents", s.createAgent)
	g.Get("/agents/:id", s.showAgent)
	g.Post("/agents/:id", s.saveAgent)
	g.Post("/agents/:id/webhook-secret/rotate", s.rotateAgentSecret)
	g.Post("/agents/:id/delete", s.deleteAgent)
	g.Get("/agents/:id/tools", s.listAgentTools)
	g.Post("/agents/:id/tools", s.createAgentTool)
	g.Post("/agents/:id/tools/:tool", s.saveAgentTool)
	g.Post("/agents/:id/tools/:tool/delete", s.deleteAgentTool)
	g.Get("/users", s.listUsers)
	g.Post("/users", s.createUser)
	g.Get("/users/:id", s.showUser)
	g.Post("/users/:id", s.saveUser)
	g.Post("/users/:id/password", s.resetUserPassword)
	g.Post("/users/:id/delete", s.deleteUser)
	g.Get("/review-pools", s.listReviewPools)
	g.Post("/review-pools", s.createReviewPool)
	g.Post("/review-pools/claim-limit", s.saveClaimLimit)
	g.Post("/review-pools/:id/delete", s.deleteReviewPool)
	g.Post("/review-pools/:id/notify", s.saveReviewPoolSettings)
	g.Post("/review-pools/:id/members", s.linkReviewPool(admin.PoolMember))
	g.Post("/review-pools/:id/agents", s.linkReviewPool(admin.PoolAgent))

	g.Get("/tokens", s.listTokens)
	g.Post("/tokens", s.issueToken)
	g.Post("/tokens/:id/revoke", s.revokeToken)

	g.Get("/tasks", s.listTasks)
	g.Get("/tasks/:id", s.showTask)
	g.Post("/tasks/:id/awaits/:await/release", s.releaseAwait)
	g.Post("/tasks/:id/awaits/:await/abort", s.abortAwait)
	g.Get("/tasks/:id/steps/:step/artifact", s.showArtifact)
	g.Post("/tasks/:id/tool-calls/:call/buttons/:button", s.clickToolCallButton)
	g.Get("/tasks/:id/assets/:asset", s.showTaskAsset)
	g.Post("/tasks/:id/messages", s.sendTaskMessage)
	g.Post("/tasks/:id/steps/:step/artifact", s.openArtifact)
	g.Post("/tasks/:id/steps/:step/artifact/session", s.renewArtifactSession)

	g.Get("/sessions", s.listSessions)
	g.Post("/sessions/:id/revoke", s.revokeSession)

	g.Get("/webhooks", s.listWebhookDeliveries)
	g.Post("/webhooks/:event/redeliver", s.redeliverWebhook)

	g.Get("/queues", s.listQueues)
	g.Post("/queues/:queue/pause", s.requireOperator, s.pauseQueue)
	g.Post("/queues/:queue/resume", s.requireOperator, s.resumeQueue)
	g.Get("/queues/:queue/tasks/:task", s.showQueueTask)
	g.Post("/queues/:queue/tasks", s.requireOperator, s.actOnQueueTasks)
	g.Post("/queues/:queue/tasks/:task/:action", s.requireOperator, s.actOnQueueTask)

	g.Get("/audit", s.listAudit)
}

// pageCSP is the content security policy of every console page but the
// artifact page: scripts, styles and images from the console only, no
// frames, forms posted only back to the console, and no framing by others.
const pageCSP = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; " +
	"connect-src 'self'; form-action 'self'; base-uri 'none'; frame-ancestors 'none'; frame-src 'none'"

// artifactCSP is the policy of the artifact page: pageCSP, except that it
// may frame the bundle origin and nothing else.
func artifactCSP(bundleOrigin string) string {
	frame := "'none'"
	if bundleOrigin != "" {
		frame = bundleOrigin
	}
	return strings.Replace(pageCSP, "frame-src 'none'", "frame-src "+frame, 1)
}

// securityHeaders sets the headers every console response carries. Pages
// hold CSRF tokens and session tokens, so they are never cached.
func securityHeaders(c *fiber.Ctx) error {
	c.Set(fiber.HeaderContentSecurityPolicy, pageCSP)
	c.Set(fiber.HeaderXContentTypeOptions, "nosniff")
	c.Set(fiber.HeaderXFrameOptions, "DENY")
	c.Set(fiber.HeaderReferrerPolicy, "same-origin")
	if !strings.HasPrefix(c.Path(), "/static/") {
		c.Set(fiber.HeaderCacheControl, "no-store")
	}
	return c.Next()
}

// originOf returns scheme://host[:port] of raw, or "" when it has none.
func originOf(raw string) string {
	u, err := url.Parse(raw)
	if err != nil || u.Scheme == "" || u.Host == "" {
		return ""
	}
	return u.Scheme + "://" + u.Host
}
