package console

import (
	"time"

	"github.com/gofiber/fiber/v2"

	"github.com/appruntime/appruntime/internal/apperr"
	"github.com/appruntime/appruntime/internal/artifact"
	"github.com/appruntime/appruntime/internal/strictjson"
	"github.com/appruntime/appruntime/models"
)

// renewRequest is what host.js posts when the bundle asks renew_session:
// the session it handed the bundle last, which the new one replaces.
type renewRequest struct {
	Replaces string `json:"replaces"`
}

// renewedSession is the reply host.js turns into the bridge's
// {type: "session", session_token, expires_at} message.
type renewedSession struct {
	SessionToken string    `json:"session_token"`
	SessionID    string    `json:"session_id"`
	ExpiresAt    time.Time `json:"expires_at"`
}

// renewArtifactSession answers POST /tasks/:id/steps/:step/artifact/session
// (host.js, with the CSRF header): the artifact page's answer to the SDK's
// renew_session bridge message. It mints a fresh session for the signed-in
// admin, as opening the artifact does, which replaces the admin's own
// session named in the body, so a renewal never ends another reviewer's
// session on the task (session.MintInput.Replaces).
func (s *server) renewArtifactSession(c *fiber.Ctx) error {
	p, err := s.artifactStep(c)
	if err != nil {
		return err
	}
	var req renewRequest
	// Strict like every other body: unknown fields and repeated keys refused.
	if err := strictjson.Unmarshal(c.Body(), &req); err != nil {
		return apperr.Invalidf("the body is {\"replaces\": SESSION_ID}: %v", err)
	}
	if req.Replaces != "" && !models.IsID(req.Replaces) {
		return apperr.Invalidf("replaces must be a session id")
	}
	a := adminOf(c)
	desc, err := s.Artifacts.Mint(c.UserContext(), artifact.MintRequest{WorkspaceID: a.WorkspaceID, UserID: a.ID, StepID: p.StepID, Replaces: req.Replaces})
	if err != nil {
		return err
	}
	return c.JSON(renewedSession{SessionToken: desc.SessionToken, SessionID: desc.SessionID, ExpiresAt: desc.ExpiresAt})
}
