package api

import (
	"github.com/gofiber/fiber/v2"

	"github.com/appruntime/appruntime/internal/apperr"
	"github.com/appruntime/appruntime/internal/artifact"
	"github.com/appruntime/appruntime/internal/strictjson"
	"github.com/appruntime/appruntime/models"
)

// mountSessions adds the host's session mint.
func (s *server) mountSessions(app *fiber.App) {
	app.Post("/api/app-tools/sessions", s.requireToken(models.ScopeHost), s.mintSession)
}

// mintSessionRequest is the body of POST /api/app-tools/sessions.
type mintSessionRequest struct {
	StepID string `json:"step_id"`
	// Replaces is the session this mint renews (the SDK's renew_session):
	// the same user's on the same step, revoked with the mint, so a renewal
	// never counts against the task's two live sessions (session.MintInput).
	Replaces string `json:"replaces,omitempty"`
}

// mintSession mints a 15-minute session on an app-tool step for the host
// token's user and answers with the artifact's complete live descriptor.
func (s *server) mintSession(c *fiber.Ctx) error {
	var req mintSessionRequest
	if err := strictjson.Unmarshal(c.Body(), &req); err != nil {
		return apperr.Invalidf(`request body must be a JSON object {"step_id": "<uuid>"} (%s)`, err)
	}
	p := principalOf(c)
	d, err := s.Artifacts.Mint(c.UserContext(), artifact.MintRequest{
		WorkspaceID: p.WorkspaceID, UserID: p.UserID, TokenID: p.TokenID, StepID: req.StepID, Replaces: req.Replaces,
	})
	if err != nil {
		return err
	}
	return c.Status(fiber.StatusCreated).JSON(d)
}
