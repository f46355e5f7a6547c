package api

import (
	"bytes"
	"errors"
	"io"
	"mime"
	"mime/multipart"
	"time"

	"github.com/gofiber/fiber/v2"

	"github.com/appruntime/appruntime/internal/apperr"
	"github.com/appruntime/appruntime/internal/auth"
	"github.com/appruntime/appruntime/internal/files"
	"github.com/appruntime/appruntime/internal/web"
)

// agentFileRoutes mounts POST /api/agent/tasks/:id/files: the agent adds a
// file to its own task (multipart/form-data, one part named "file", at most
// files.MaxFileBytes, typed by its bytes).
func (s *server) agentFileRoutes(app *fiber.App) {
	app.Post("/api/agent/tasks/:id/files", s.requireTokenStreamed(), s.uploadAgentTaskFile)
}

// requireTokenStreamed is requireToken for the agent scope on a route that
// streams its body itself: a file is larger than the in-flight body budget
// of ReadBody, and is read part by part instead, never whole twice.
func (s *server) requireTokenStreamed() fiber.Handler {
	return func(c *fiber.Ctx) error {
		token, ok := auth.BearerToken(c.Get(fiber.HeaderAuthorization))
		if !ok {
			return apperr.Unauthenticatedf("a valid agent token is required")
		}
		p, err := s.Admin.VerifyToken(c.UserContext(), token, "agent")
		if err != nil {
			return err
		}
		c.Locals(principalKey, p)
		return c.Next()
	}
}

// uploadedFile is a stored file with its managed-storage URL, which only
// the task's own sessions can use (an extraction's file_url).
type uploadedFile struct {
	files.Info
	URL          string    `json:"url"`
	URLExpiresAt time.Time `json:"url_expires_at"`
}

// uploadAgentTaskFile answers with the stored file (201): its id, name,
// sniffed content type, pages and size. Another agent's task is a 404; a
// body that is not multipart or has no "file" part a 400; a file over the
// cap a 413; a kind the product does not read a 415.
func (s *server) uploadAgentTaskFile(c *fiber.Ctx) error {
	if s.Files == nil {
		return apperr.NotImplementedf("task files need SECRETS_KEY on this deployment")
	}
	ctx := c.UserContext()
	taskID := c.Params("id")
	if _, err := s.Tasks.Get(ctx, agentCaller(c), taskID); err != nil {
		return err
	}
	mediaType, params, err := mime.ParseMediaType(c.Get(fiber.HeaderContentType))
	if err != nil || mediaType != "multipart/form-data" || params["boundary"] == "" {
		return apperr.New(apperr.UnsupportedMedia, "send the file as multipart/form-data with a part named \"file\"")
	}
	req := c.Request()
	var body io.Reader
	if req.IsBodyStream() {
		body = req.BodyStream()
		if conn := c.Context().Conn(); conn != nil {
			_ = conn.SetReadDeadline(time.Now().Add(web.ReadTimeout + time.Duration(files.MaxFileBytes/web.MinBodyBytesPerSecond)*time.Second))
		}
	} else {
		body = bytes.NewReader(c.Body())
	}
	mr := multipart.NewReader(body, params["boundary"])
	for {
		part, err := mr.NextPart()
		if errors.Is(err, io.EOF) {
			return apperr.Invalidf("the form has no part named \"file\"")
		}
		if err != nil {
			return apperr.Invalidf("the multipart body could not be read: %v", err)
		}
		if part.FormName() != "file" {
			continue
		}
		f, err := s.Files.Upload(ctx, taskID, part.FileName(), part.Header.Get(fiber.HeaderContentType), part)
		if err != nil {
			c.Context().SetConnectionClose() // the rest of the body is not read
			return err
		}
		url, expires := s.Files.URL(f)
		return c.Status(fiber.StatusCreated).JSON(uploadedFile{Info: files.InfoOf(f), URL: url, URLExpiresAt: expires})
	}
}
