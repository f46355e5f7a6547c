package api

import (
	"log/slog"

	"github.com/gofiber/fiber/v2"

	"github.com/appruntime/appruntime/internal/admin"
	"github.com/appruntime/appruntime/internal/agentcall"
	"github.com/appruntime/appruntime/internal/agentmcp"
	"github.com/appruntime/appruntime/internal/agenttool"
	"github.com/appruntime/appruntime/internal/artifact"
	"github.com/appruntime/appruntime/internal/binding"
	"github.com/appruntime/appruntime/internal/bundle"
	"github.com/appruntime/appruntime/internal/claim"
	"github.com/appruntime/appruntime/internal/files"
	"github.com/appruntime/appruntime/internal/metrics"
	"github.com/appruntime/appruntime/internal/reply"
	"github.com/appruntime/appruntime/internal/runtime"
	"github.com/appruntime/appruntime/internal/session"
	"github.com/appruntime/appruntime/internal/task"
	"github.com/appruntime/appruntime/internal/toolconfig"
	"github.com/appruntime/appruntime/internal/web"
)

// Services are what the API may touch: the domain services its handlers
// call, its logger and the checks of /readyz. internal/platform builds them
// (Platform.APIServices).
type Services struct {
	Log *slog.Logger
	// Health are the dependencies /readyz pings (database, Redis).
	Health []web.Check

	// AgentCalls saves agent tool declarations and runs their calls.
	AgentCalls *agentcall.Service
	// AgentTools lists an agent's tools (GET /api/agent/tools) and serves them over MCP (/mcp).
	AgentTools *agentmcp.Service
	// Identity publishes the JWKS of agent tools' identity tokens.
	Identity *agenttool.IdentitySigner
	// Replies stores agents' assets and replies.
	Replies *reply.Service
	// AssetFrameAncestors are the host origins that may frame an asset
	// served by signed URL (ASSET_FRAME_ANCESTORS); none by default.
	AssetFrameAncestors []string
	// Admin administers workspaces, agents, integrations, users and tokens,
	// and verifies API tokens.
	Admin *admin.Service
	// Artifacts mints the sessions a host opens for an app-tool step.
	Artifacts *artifact.Minter
	// Bindings saves bindings (admin endpoints).
	Bindings *binding.Service
	// Bundles uploads and serves bundle versions.
	Bundles *bundle.Service
	// Runtime runs the verbs bundles call.
	Runtime *runtime.Service
	// Files stores a task's uploaded files (POST /api/agent/tasks/{id}/files)
	// and serves managed-storage URLs (GET /api/files/{id}); nil answers 501.
	Files *files.Service
	// Queue is the review queue (POST /api/review/next, /abort).
	Queue *claim.Queue
	// Sessions verifies the bundles' session tokens.
	Sessions *session.Issuer
	// Tasks creates agent tasks and pages their events.
	Tasks *task.Service
	// Tools saves configured tools.
	Tools *toolconfig.Service
	// Metrics records the runtime verbs and every other request; nil
	// records nothing.
	Metrics *metrics.Metrics
	// Proxies are the hops whose X-Forwarded-For names the access log's
	// client (Config.TrustedProxies).
	Proxies web.Proxies
	// PublicAPIURL is this API's public base URL (PUBLIC_API_URL): the
	// served OpenAPI document's server.
	PublicAPIURL string
}

type server struct {
	Services
}

// New returns the API app with every route mounted.
func New(svc Services) *fiber.App {
	s := &server{Services: svc}
	app := web.NewApp(web.Options{
		Name: "api", Logger: svc.Log,
		BodyLimitFunc: bodyLimit, BodyAfterAuth: true,
		// Replies carry tokens, secrets and live data: no cache keeps them,
		// and no browser guesses another type than the one declared. The
		// bundle route replaces Cache-Control: its URLs name immutable bytes.
		Headers: [][2]string{{fiber.HeaderCacheControl, "no-store"}, {fiber.HeaderXContentTypeOptions, "nosniff"}},
		Observe: s.observe(),
		Proxies: svc.Proxies,
	})
	web.MountHealth(app, svc.Log, svc.Health...)
	web.MountFavicon(app)
	s.routes(app)
	return app
}

// routes mounts every route. The runtime verbs, host, agent and admin
// endpoints each live in their own file.
func (s *server) routes(app *fiber.App) {
	s.runtimeRoutes(app)
	s.mountSessions(app)
	s.mountAgentEvents(app)
	s.adminBindingRoutes(app)
	s.adminWorkspaceRoutes(app)
	s.adminAgentRoutes(app)
	s.adminIntegrationRoutes(app)
	s.adminUserRoutes(app)
	s.adminReviewPoolRoutes(app)
	s.adminTokenRoutes(app)
	s.adminConfiguredToolRoutes(app)
	s.bundleRoutes(app)
	s.agentTaskRoutes(app)
	s.adminAgentToolRoutes(app)
	s.agentToolCallRoutes(app)
	s.agentToolRoutes(app)
	s.agentReplyRoutes(app)
	s.mountJWKS(app)
	s.fileRoutes(app)
	s.reviewRoutes(app)
	s.sdkRoutes(app)
	s.openAPIRoutes(app)
}
