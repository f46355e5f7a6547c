package api

import (
	"context"
	"log/slog"

	"github.com/gofiber/fiber/v2"
	"github.com/redis/go-redis/v9"

	"github.com/appruntime/appruntime/internal/config"
	"github.com/appruntime/appruntime/internal/store"
	"github.com/appruntime/appruntime/internal/web"
)

// Deps is what the API needs; cmd/appruntime builds it.
type Deps struct {
	Config *config.Config
	Log    *slog.Logger
	Store  *store.Store
	Redis  *redis.Client
}

type server struct {
	Deps
}

// New returns the API app with every route mounted.
func New(d Deps) *fiber.App {
	app := web.NewApp(web.Options{Name: "api", Logger: d.Log})
	web.MountHealth(app, d.Log,
		web.Check{Name: "database", Func: d.Store.Ping},
		web.Check{Name: "redis", Func: func(ctx context.Context) error { return d.Redis.Ping(ctx).Err() }},
	)
	s := &server{Deps: d}
	s.routes(app)
	return app
}

func (s *server) routes(app *fiber.App) {
}
