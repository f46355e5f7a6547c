package console

import (
	"encoding/json"
	"strconv"

	"github.com/gofiber/fiber/v2"

	"github.com/appruntime/appruntime/internal/apperr"
	"github.com/appruntime/appruntime/internal/binding"
)

// saveBinding answers POST /bindings/:id: the editor's allowed_operations
// saved as a new version through the same validation as the admin API. A
// refusal (400, or 409 when someone saved meanwhile) shows the form again
// with the message and the admin's unsaved text.
func (s *server) saveBinding(c *fiber.Ctx) error {
	ctx, a := c.UserContext(), adminOf(c)
	id := c.Params("id")
	text := c.FormValue("allowed_operations")
	edited, err := strconv.Atoi(c.FormValue("version"))
	if err != nil || edited < 1 {
		return apperr.Invalidf("version must be the binding version the text was edited from")
	}
	b, err := s.Bindings.Update(ctx, a.WorkspaceID, id, a.actor(), binding.Patch{
		AllowedOperations: json.RawMessage(text), ExpectedVersion: edited,
	})
	if apperr.Is(err, apperr.Invalid) || apperr.Is(err, apperr.Conflict) {
		cur, gerr := s.Bindings.Get(ctx, a.WorkspaceID, id)
		if gerr != nil {
			return gerr
		}
		_, status, msg := apperr.Public(err)
		return s.renderBinding(c, status, cur, text, edited, msg)
	}
	if err != nil {
		return err
	}
	return redirectTo(c, "/bindings/"+b.ID, "saved")
}
