package console

import (
	"github.com/gofiber/fiber/v2"

	"github.com/appruntime/appruntime/internal/audit"
)

// auditPage is a page of the audit log.
type auditPage struct {
	Log    audit.Page
	Actors map[string]string
}

// listAudit answers GET /audit[?page=…]: who changed what, newest first.
func (s *server) listAudit(c *fiber.Ctx) error {
	page, err := s.Admin.AuditLog(c.UserContext(), adminOf(c).WorkspaceID, pageParam(c))
	if err != nil {
		return err
	}
	actors, err := s.actorNames(c)
	if err != nil {
		return err
	}
	return s.render(c, fiber.StatusOK, "audit", "Audit log", "audit", auditPage{Log: page, Actors: actors})
}
