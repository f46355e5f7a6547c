package console

import (
	"context"
	"log/slog"

	"github.com/gofiber/fiber/v2"
	"github.com/redis/go-redis/v9"

	"github.com/appruntime/appruntime/internal/config"
	"github.com/appruntime/appruntime/internal/store"
	"github.com/appruntime/appruntime/internal/web"
)

// Deps is what the console needs; cmd/appruntime builds it.
type Deps struct {
	Config *config.Config
	Log    *slog.Logger
	Store  *store.Store
	Redis  *redis.Client
}

type server struct {
	Deps
}

// New returns the console app with every page mounted.
func New(d Deps) (*fiber.App, error) {
	app := web.NewApp(web.Options{Name: "console", Logger: d.Log})
	web.MountHealth(app, d.Log,
		web.Check{Name: "database", Func: d.Store.Ping},
		web.Check{Name: "redis", Func: func(ctx context.Context) error { return d.Redis.Ping(ctx).Err() }},
	)
	s := &server{Deps: d}
	s.routes(app)
	return app, nil
}

func (s *server) routes(app *fiber.App) {
}
