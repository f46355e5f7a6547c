package api

import (
	"github.com/gofiber/fiber/v2"

	"github.com/appruntime/appruntime/internal/apperr"
	"github.com/appruntime/appruntime/internal/files"
)

// fileRoutes mounts the route behind managed-storage URLs (GET
// /api/files/{id}?task=&exp=&sig=): the URL's signature is its only
// credential, so a viewer's <img>, <iframe> or fetch can load it.
func (s *server) fileRoutes(app *fiber.App) {
	app.Get(files.FilesPath+"/:id", s.serveFile)
}

// serveFile answers a managed-storage URL with the file's bytes and the
// headers files.Serve chose.
func (s *server) serveFile(c *fiber.Ctx) error {
	if s.Files == nil {
		return apperr.NotImplementedf("this deployment keeps no files")
	}
	d, err := s.Files.Serve(c.UserContext(), files.Ticket{
		FileID: c.Params("id"), TaskID: c.Query("task"), Exp: c.Query("exp"), Sig: c.Query("sig"),
	})
	if err != nil {
		return err
	}
	for k, v := range d.Header {
		c.Set(k, v[0])
	}
	if d.Redirect != "" {
		return c.Redirect(d.Redirect, fiber.StatusFound)
	}
	return c.Send(d.Body)
}
