package api

import (
	"github.com/gofiber/fiber/v2"

	"github.com/appruntime/appruntime/internal/admin"
	"github.com/appruntime/appruntime/models"
)

// adminReviewPoolRoutes mounts /api/admin/review-pools: the workspace's
// reviewer pools, their members and the agents whose review tasks they take
// (docs/admins.md#review-pools-and-the-claim-limit).
func (s *server) adminReviewPoolRoutes(app *fiber.App) {
	adminOnly := s.requireToken(models.ScopeAdmin)
	app.Get("/api/admin/review-pools", adminOnly, s.listReviewPools)
	app.Post("/api/admin/review-pools", adminOnly, s.createReviewPool)
	app.Get("/api/admin/review-pools/:id", adminOnly, s.getReviewPool)
	app.Patch("/api/admin/review-pools/:id", adminOnly, s.updateReviewPool)
	app.Delete("/api/admin/review-pools/:id", adminOnly, s.deleteReviewPool)
	app.Post("/api/admin/review-pools/:id/webhook-secret/rotate", adminOnly, s.rotateReviewPoolWebhookSecret)
	app.Put("/api/admin/review-pools/:id/members/:user_id", adminOnly, s.linkReviewPool(admin.PoolMember, "user_id", true))
	app.Delete("/api/admin/review-pools/:id/members/:user_id", adminOnly, s.linkReviewPool(admin.PoolMember, "user_id", false))
	app.Put("/api/admin/review-pools/:id/agents/:agent_id", adminOnly, s.linkReviewPool(admin.PoolAgent, "agent_id", true))
	app.Delete("/api/admin/review-pools/:id/agents/:agent_id", adminOnly, s.linkReviewPool(admin.PoolAgent, "agent_id", false))
}

func (s *server) listReviewPools(c *fiber.Ctx) error {
	list, err := s.Admin.ListReviewPools(c.UserContext(), principalOf(c).WorkspaceID)
	if err != nil {
		return err
	}
	return c.JSON(fiber.Map{"review_pools": list})
}

func (s *server) getReviewPool(c *fiber.Ctx) error {
	p, err := s.Admin.GetReviewPool(c.UserContext(), principalOf(c).WorkspaceID, c.Params("id"))
	if err != nil {
		return err
	}
	return c.JSON(p)
}

// createReviewPool answers POST /api/admin/review-pools {"name"}.
func (s *server) createReviewPool(c *fiber.Ctx) error {
	var in admin.ReviewPoolInput
	if err := decodeStrictBody(c, &in); err != nil {
		return err
	}
	p, err := s.Admin.CreateReviewPool(c.UserContext(), principalOf(c).WorkspaceID, adminActor(c), in)
	if err != nil {
		return err
	}
	return c.Status(fiber.StatusCreated).JSON(p)
}

// rotateReviewPoolWebhookSecret answers the pool with its notification
// webhook's new signing secret, shown this once
// (docs/admins.md#notifications-of-waiting-work).
func (s *server) rotateReviewPoolWebhookSecret(c *fiber.Ctx) error {
	p, err := s.Admin.RotatePoolWebhookSecret(c.UserContext(), principalOf(c).WorkspaceID, adminActor(c), c.Params("id"))
	if err != nil {
		return err
	}
	return c.JSON(p)
}

// updateReviewPool takes a merge patch of ReviewPoolInput: the name and the
// notification settings (wait_threshold_seconds, escalate_after_seconds,
// escalate_to_pool_id, notify_webhook_url, notify_emails).
func (s *server) updateReviewPool(c *fiber.Ctx) error {
	p, err := s.Admin.UpdateReviewPool(c.UserContext(), principalOf(c).WorkspaceID, adminActor(c), c.Params("id"), c.Body())
	if err != nil {
		return err
	}
	return c.JSON(p)
}

func (s *server) deleteReviewPool(c *fiber.Ctx) error {
	if err := s.Admin.DeleteReviewPool(c.UserContext(), principalOf(c).WorkspaceID, adminActor(c), c.Params("id")); err != nil {
		return err
	}
	return c.SendStatus(fiber.StatusNoContent)
}

// linkReviewPool answers PUT (add) and DELETE (remove) of a pool's member or
// agent, named by the route parameter param: both idempotent; a PUT answers
// the pool, a DELETE 204.
func (s *server) linkReviewPool(link admin.ReviewPoolLink, param string, add bool) fiber.Handler {
	return func(c *fiber.Ctx) error {
		p, err := s.Admin.LinkReviewPool(c.UserContext(), principalOf(c).WorkspaceID, adminActor(c), c.Params("id"), link, c.Params(param), add)
		if err != nil {
			return err
		}
		if !add {
			return c.SendStatus(fiber.StatusNoContent)
		}
		return c.JSON(p)
	}
}
