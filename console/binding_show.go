package console

import (
	"encoding/json"
	"fmt"

	"github.com/gofiber/fiber/v2"

	"github.com/appruntime/appruntime/internal/binding"
)

// bindingPage is a binding's page: its settings and the allowed_operations
// editor.
type bindingPage struct {
	Binding         binding.Binding
	IntegrationName string
	// Text is what the editor holds: the saved document, pretty-printed, or
	// the admin's unsaved text when a save was refused.
	Text string
	// EditedVersion is the version the text was edited from; a save over a
	// newer version is refused instead of losing that version's changes.
	EditedVersion int
	// Unscoped are the write ops saved before the fixed-values rule that
	// break it: they answer 403 until the binding is fixed.
	Unscoped []binding.Unscoped
}

// showBinding answers GET /bindings/:id.
func (s *server) showBinding(c *fiber.Ctx) error {
	b, err := s.Bindings.Get(c.UserContext(), adminOf(c).WorkspaceID, c.Params("id"))
	if err != nil {
		return err
	}
	text, err := json.MarshalIndent(b.AllowedOperations, "", "  ")
	if err != nil {
		return fmt.Errorf("console: format allowed_operations of %s: %w", b.ID, err)
	}
	return s.renderBinding(c, fiber.StatusOK, b, string(text), b.Version, "")
}

// renderBinding renders a binding's page with the editor holding text.
func (s *server) renderBinding(c *fiber.Ctx, status int, b binding.Binding, text string, edited int, refusal string) error {
	p := bindingPage{Binding: b, Text: text, EditedVersion: edited, Unscoped: binding.UnscopedWrites(b.AllowedOperations)}
	if b.IntegrationID != nil {
		names, err := s.integrationNames(c)
		if err != nil {
			return err
		}
		p.IntegrationName = names[*b.IntegrationID]
	}
	return s.renderView(c, status, "binding", view{Title: "Binding " + b.Name, Section: "bindings", Error: refusal, Data: p})
}
