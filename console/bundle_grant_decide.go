package console

import (
	"strconv"

	"github.com/gofiber/fiber/v2"

	"github.com/appruntime/appruntime/internal/apperr"
)

// decideBundleGrant answers POST /bundles/:id/versions/:version/grants/:decision
// (approve, refuse or withdraw): the admin's decision on the network grants
// a version declares, audited as bundle.grant.<decision>
// (docs/admins.md#approving-network-grants). A decision the grant's state
// does not allow (it was decided already) shows the bundle page again with
// the message and a 409.
func (s *server) decideBundleGrant(c *fiber.Ctx) error {
	ctx, a := c.UserContext(), adminOf(c)
	id, decision := c.Params("id"), c.Params("decision")
	version, err := strconv.Atoi(c.Params("version"))
	if err != nil || version < 1 {
		return apperr.NotFoundf("version %q not found", c.Params("version"))
	}
	_, err = s.Bundles.Decide(ctx, a.WorkspaceID, a.actor(), id, version, decision)
	if apperr.Is(err, apperr.Conflict) {
		return s.showBundleRefusal(c, id, bundleUploadForm{}, err)
	}
	if err != nil {
		return err
	}
	return redirectTo(c, "/bundles/"+id, "grant_"+decision)
}
