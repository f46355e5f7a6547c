package console

import (
	"github.com/gofiber/fiber/v2"

	"github.com/appruntime/appruntime/internal/admin"
)

// reviewPoolsPage is the Review pools page: the workspace's claim limit,
// its pools with their members and agents, and the forms that change them
// (docs/admins.md#review-pools-and-the-claim-limit).
type reviewPoolsPage struct {
	Workspace admin.WorkspaceView
	Pools     []admin.ReviewPoolView
	Users     []admin.UserView
	Agents    []admin.AgentView
	// UserNames and AgentNames name the ids the pools list.
	UserNames, AgentNames map[string]string
	Form                  admin.ReviewPoolInput
	Refusal               formRefusal
	// SettingsPool is the pool whose notification form the refusal is
	// about, or whose new webhook secret Secret shows this once.
	SettingsPool, Secret string
	// PoolNames names the workspace's pools, for escalation targets.
	PoolNames map[string]string
}

// reviewPoolFormFields are the pool forms' fields, named as the admin API
// names them.
var reviewPoolFormFields = []string{"name", "review_claim_limit", "wait_threshold_seconds", "escalate_after_seconds",
	"escalate_to_pool_id", "notify_webhook_url", "notify_emails"}

// listReviewPools answers GET /review-pools.
func (s *server) listReviewPools(c *fiber.Ctx) error {
	return s.renderReviewPools(c, fiber.StatusOK, admin.ReviewPoolInput{}, formRefusal{})
}

// renderReviewPools renders the Review pools page with form in the create
// form and r's refusal.
func (s *server) renderReviewPools(c *fiber.Ctx, status int, form admin.ReviewPoolInput, r formRefusal) error {
	return s.renderReviewPoolsPage(c, status, reviewPoolsPage{Form: form, Refusal: r})
}

// renderReviewPoolsPage renders the Review pools page around page's form,
// refusal and shown secret.
func (s *server) renderReviewPoolsPage(c *fiber.Ctx, status int, page reviewPoolsPage) error {
	ctx, a := c.UserContext(), adminOf(c)
	ws, err := s.Admin.GetWorkspace(ctx, a.WorkspaceID, a.WorkspaceID)
	if err != nil {
		return err
	}
	pools, err := s.Admin.ListReviewPools(ctx, a.WorkspaceID)
	if err != nil {
		return err
	}
	users, err := s.Admin.ListUsers(ctx, a.WorkspaceID)
	if err != nil {
		return err
	}
	agents, err := s.Admin.ListAgents(ctx, a.WorkspaceID)
	if err != nil {
		return err
	}
	page.Workspace, page.Pools, page.Users, page.Agents = ws, pools, users, agents
	page.UserNames, page.AgentNames, page.PoolNames = map[string]string{}, map[string]string{}, map[string]string{}
	for _, p := range pools {
		page.PoolNames[p.ID] = p.Name
	}
	for _, u := range users {
		page.UserNames[u.ID] = u.Email
	}
	for _, ag := range agents {
		page.AgentNames[ag.ID] = ag.Name
	}
	return s.renderView(c, status, "review_pools", view{Title: "Review pools", Section: "review-pools", Error: page.Refusal.Page(), Data: page})
}
