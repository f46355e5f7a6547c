package console

import (
	"context"

	"github.com/gofiber/fiber/v2"

	"github.com/appruntime/appruntime/internal/platform"
	"github.com/appruntime/appruntime/internal/web"
)

type server struct {
	*platform.Platform
}

// New returns the console app with every page mounted.
func New(p *platform.Platform) (*fiber.App, error) {
	app := web.NewApp(web.Options{Name: "console", Logger: p.Log})
	web.MountHealth(app, p.Log,
		web.Check{Name: "database", Func: p.Store.Ping},
		web.Check{Name: "redis", Func: func(ctx context.Context) error { return p.Redis.Ping(ctx).Err() }},
	)
	s := &server{Platform: p}
	s.routes(app)
	return app, nil
}

func (s *server) routes(app *fiber.App) {
}
