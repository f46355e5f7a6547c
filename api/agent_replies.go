package api

import (
	"github.com/gofiber/fiber/v2"

	"github.com/appruntime/appruntime/models"
)

// Paths whose bodies are larger than the default cap.
const (
	assetUploadPath = "/api/agent/assets"
	// maxReplyBodyBytes bounds a reply: 20 blocks, an app block's payload
	// up to 32 KiB and its fallback up to 10000 characters.
	maxReplyBodyBytes = 1 << 20
)

// agentReplyRoutes mounts an agent's asset uploads and replies.
func (s *server) agentReplyRoutes(app *fiber.App) {
	agentOnly := s.requireToken(models.ScopeAgent)
	app.Post(assetUploadPath, agentOnly, s.uploadAgentAsset)
	app.Post("/api/agent/tasks/:id/replies", agentOnly, s.postAgentReply)
	app.Get("/api/tasks/:id/replies", s.requireToken(models.ScopeHost), s.listTaskReplies)
}

// listTaskReplies answers GET /api/tasks/:id/replies (host token, a task of
// the token's workspace): {"replies": [...]}, the agent's replies oldest
// first, as they were posted.
func (s *server) listTaskReplies(c *fiber.Ctx) error {
	list, err := s.Replies.TaskReplies(c.UserContext(), principalOf(c).WorkspaceID, c.Params("id"))
	if err != nil {
		return err
	}
	return c.JSON(fiber.Map{"replies": list})
}

// uploadAgentAsset answers POST /api/agent/assets, the body an HTML file
// sent as text/html (at most 4194304 bytes), with {"id": "ast_…", …} (201).
func (s *server) uploadAgentAsset(c *fiber.Ctx) error {
	v, err := s.Replies.UploadAsset(c.UserContext(), agentCaller(c), c.Get(fiber.HeaderContentType), c.Body())
	if err != nil {
		return err
	}
	return c.Status(fiber.StatusCreated).JSON(v)
}

// postAgentReply answers POST /api/agent/tasks/:id/replies {"final",
// "blocks"} with the stored reply (201); any refused block is one 400
// invalid_blocks naming every refused block's reason, and nothing is kept.
func (s *server) postAgentReply(c *fiber.Ctx) error {
	v, err := s.Replies.Post(c.UserContext(), agentCaller(c), c.Params("id"), c.Body())
	if err != nil {
		return err
	}
	return c.Status(fiber.StatusCreated).JSON(v)
}
