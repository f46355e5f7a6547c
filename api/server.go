package api

import (
	"context"

	"github.com/gofiber/fiber/v2"

	"github.com/appruntime/appruntime/internal/platform"
	"github.com/appruntime/appruntime/internal/web"
)

type server struct {
	*platform.Platform
}

// New returns the API app with every route mounted.
func New(p *platform.Platform) *fiber.App {
	app := web.NewApp(web.Options{
		Name: "api", Logger: p.Log,
		BodyLimitFunc: bodyLimit, BodyAfterAuth: true,
		// Replies carry tokens, secrets and live data: no cache keeps them,
		// and no browser guesses another type than the one declared. The
		// bundle route replaces Cache-Control: its URLs name immutable bytes.
		Headers: [][2]string{{fiber.HeaderCacheControl, "no-store"}, {fiber.HeaderXContentTypeOptions, "nosniff"}},
	})
	web.MountHealth(app, p.Log,
		web.Check{Name: "database", Func: p.Store.Ping},
		web.Check{Name: "redis", Func: func(ctx context.Context) error { return p.Redis.Ping(ctx).Err() }},
	)
	s := &server{Platform: p}
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
	s.adminTokenRoutes(app)
	s.adminConfiguredToolRoutes(app)
	s.bundleRoutes(app)
	s.agentTaskRoutes(app)
	s.adminAgentToolRoutes(app)
	s.agentToolCallRoutes(app)
	s.agentReplyRoutes(app)
	s.mountJWKS(app)
}
