package console

import (
	"encoding/json"
	"strconv"
	"strings"

	"github.com/gofiber/fiber/v2"

	"github.com/appruntime/appruntime/internal/admin"
	"github.com/appruntime/appruntime/internal/apperr"
)

// createReviewPool answers POST /review-pools (name) as
// POST /api/admin/review-pools does, audited as review_pool.create.
func (s *server) createReviewPool(c *fiber.Ctx) error {
	a := adminOf(c)
	in := admin.ReviewPoolInput{Name: c.FormValue("name")}
	_, err := s.Admin.CreateReviewPool(c.UserContext(), a.WorkspaceID, a.actor(), in)
	if r, refused := refuseForm(err, reviewPoolFormFields...); refused {
		return s.renderReviewPools(c, r.Status, in, r)
	}
	if err != nil {
		return err
	}
	return redirectTo(c, "/review-pools", "review_pool_saved")
}

// saveReviewPoolSettings answers POST /review-pools/:id/notify
// (wait_threshold_seconds, escalate_after_seconds, escalate_to_pool_id,
// notify_webhook_url, notify_emails: blank is off) as PATCH
// /api/admin/review-pools/:id does, audited as review_pool.update. A
// webhook URL set for the first time brings a signing secret, shown on the
// page this once.
func (s *server) saveReviewPoolSettings(c *fiber.Ctx) error {
	a, id := adminOf(c), c.Params("id")
	patch := map[string]any{"notify_webhook_url": strings.TrimSpace(c.FormValue("notify_webhook_url")),
		"notify_emails": strings.FieldsFunc(c.FormValue("notify_emails"), func(r rune) bool { return r == ',' || r == ' ' || r == '\n' || r == '\r' })}
	var err error
	for _, f := range []string{"wait_threshold_seconds", "escalate_after_seconds"} {
		patch[f] = nil
		if raw := strings.TrimSpace(c.FormValue(f)); raw != "" {
			n, convErr := strconv.Atoi(raw)
			if convErr != nil {
				err = apperr.Invalidf("%s must be a whole number of seconds, got %q", f, raw)
			}
			patch[f] = n
		}
	}
	patch["escalate_to_pool_id"] = nil
	if to := c.FormValue("escalate_to_pool_id"); to != "" {
		patch["escalate_to_pool_id"] = to
	}
	var v admin.ReviewPoolView
	if err == nil {
		body, _ := json.Marshal(patch)
		v, err = s.Admin.UpdateReviewPool(c.UserContext(), a.WorkspaceID, a.actor(), id, body)
	}
	if r, refused := refuseForm(err, reviewPoolFormFields...); refused {
		return s.renderReviewPoolsPage(c, r.Status, reviewPoolsPage{Refusal: r, SettingsPool: id})
	}
	if err != nil {
		return err
	}
	if v.NotifyWebhookSecret != "" {
		return s.renderReviewPoolsPage(c, fiber.StatusOK, reviewPoolsPage{SettingsPool: id, Secret: v.NotifyWebhookSecret})
	}
	return redirectTo(c, "/review-pools", "review_pool_saved")
}

// deleteReviewPool answers POST /review-pools/:id/delete as
// DELETE /api/admin/review-pools/:id does.
func (s *server) deleteReviewPool(c *fiber.Ctx) error {
	a := adminOf(c)
	if err := s.Admin.DeleteReviewPool(c.UserContext(), a.WorkspaceID, a.actor(), c.Params("id")); err != nil {
		return err
	}
	return redirectTo(c, "/review-pools", "review_pool_deleted")
}

// linkReviewPool answers POST /review-pools/:id/members and
// /review-pools/:id/agents (target_id, and remove=yes to take it out) as
// the admin API's PUT and DELETE of a pool's member or agent do.
func (s *server) linkReviewPool(link admin.ReviewPoolLink) fiber.Handler {
	return func(c *fiber.Ctx) error {
		a := adminOf(c)
		_, err := s.Admin.LinkReviewPool(c.UserContext(), a.WorkspaceID, a.actor(), c.Params("id"), link,
			c.FormValue("target_id"), c.FormValue("remove") != "yes")
		if err != nil {
			return err
		}
		return redirectTo(c, "/review-pools", "review_pool_saved")
	}
}

// saveClaimLimit answers POST /review-pools/claim-limit (review_claim_limit)
// as PATCH /api/admin/workspaces/:id {"review_claim_limit"} does, audited
// as workspace.update.
func (s *server) saveClaimLimit(c *fiber.Ctx) error {
	a := adminOf(c)
	raw := strings.TrimSpace(c.FormValue("review_claim_limit"))
	n, err := strconv.Atoi(raw)
	if err != nil {
		err = apperr.Invalidf("review_claim_limit must be a whole number, got %q", raw)
	} else {
		patch, _ := json.Marshal(map[string]int{"review_claim_limit": n})
		_, err = s.Admin.UpdateWorkspace(c.UserContext(), a.WorkspaceID, a.actor(), a.WorkspaceID, patch)
	}
	if r, refused := refuseForm(err, reviewPoolFormFields...); refused {
		return s.renderReviewPools(c, r.Status, admin.ReviewPoolInput{}, r)
	}
	if err != nil {
		return err
	}
	return redirectTo(c, "/review-pools", "claim_limit_saved")
}
