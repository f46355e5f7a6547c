package api

import (
	"github.com/gofiber/fiber/v2"

	"github.com/appruntime/appruntime/internal/appblock"
	"github.com/appruntime/appruntime/internal/reply"
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
	app.Get(reply.AssetsPath+"/:id", s.serveAsset)
}

// listTaskReplies answers GET /api/tasks/:id/replies (host token, a task of
// the token's workspace): {"replies": [...]}, the agent's replies oldest
// first, as they were posted, each with signed short-lived URLs of the
// assets its app blocks run (asset_urls, asset_urls_expire_at).
func (s *server) listTaskReplies(c *fiber.Ctx) error {
	list, err := s.Replies.HostReplies(c.UserContext(), principalOf(c).WorkspaceID, c.Params("id"))
	if err != nil {
		return err
	}
	return c.JSON(fiber.Map{"replies": list})
}

// serveAsset answers a signed asset URL (GET /api/assets/{id}?task=&exp=&sig=;
// the signature is its only credential, so a host's sandboxed frame can
// load it) with the asset under its own policy (appblock.AssetHeaders),
// framable by the ASSET_FRAME_ANCESTORS origins only.
func (s *server) serveAsset(c *fiber.Ctx) error {
	data, err := s.Replies.ServeAsset(c.UserContext(), reply.AssetTicket{
		AssetID: c.Params("id"), TaskID: c.Query("task"), Exp: c.Query("exp"), Sig: c.Query("sig"),
	})
	if err != nil {
		return err
	}
	for _, h := range appblock.AssetHeaders(s.AssetFrameAncestors...) {
		c.Set(h[0], h[1])
	}
	return c.Send(data)
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
