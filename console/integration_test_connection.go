package console

import (
	"github.com/gofiber/fiber/v2"

	"github.com/appruntime/appruntime/internal/admin"
	"github.com/appruntime/appruntime/internal/apperr"
)

// integrationsPage is the integrations list and, after a "test connection",
// its outcome on the integration tested.
type integrationsPage struct {
	Integrations []admin.IntegrationView
	// Tested is the id of the integration just tested; Passed and Result
	// say how it went, in words.
	Tested string
	Passed bool
	Result string
}

// testIntegration answers POST /integrations/:id/test: it connects as the
// integration's real calls do, with their guards (admin.Service.
// TestIntegration), and shows what was reached or what failed. It changes
// nothing.
func (s *server) testIntegration(c *fiber.Ctx) error {
	ctx, a := c.UserContext(), adminOf(c)
	result, err := s.Admin.TestIntegration(ctx, a.WorkspaceID, c.Params("id"))
	pg := integrationsPage{Tested: c.Params("id"), Passed: err == nil, Result: result}
	status := fiber.StatusOK
	if err != nil {
		code, _, msg := apperr.Public(err)
		if code == apperr.NotFound || code == apperr.Internal {
			return err
		}
		pg.Result, status = msg, apperr.Status(code)
	}
	if c.FormValue("from") == "edit" {
		i, gerr := s.Admin.GetIntegration(ctx, a.WorkspaceID, c.Params("id"))
		if gerr != nil {
			return gerr
		}
		return s.renderIntegrationForm(c, status, integrationForm{Integration: i, Name: i.Name, Kind: i.Kind, BaseURL: i.BaseURL,
			Config: formJSON(i.Config), Tested: true, Passed: pg.Passed, Result: pg.Result})
	}
	if pg.Integrations, err = s.Admin.ListIntegrations(ctx, a.WorkspaceID); err != nil {
		return err
	}
	return s.render(c, status, "integrations", "Integrations", "integrations", pg)
}
