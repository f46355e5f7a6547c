package console

import (
	"time"

	"github.com/gofiber/fiber/v2"

	"github.com/appruntime/appruntime/internal/apperr"
	"github.com/appruntime/appruntime/internal/audit"
)

// dateLayout is how the audit search's date fields are written (an HTML
// date input's value).
const dateLayout = "2006-01-02"

// auditPage is a page of the audit log and the search that found it.
type auditPage struct {
	Log    audit.Page
	Actors map[string]string
	// Targets names the page's targets by "<type>:<id>"; a target without
	// a name (gone, or of a kind without one) is shown by its id.
	Targets map[string]string
	// Actor, Action, Object, From and To are the search asked for, as the
	// URL has them (?actor=&action=&object=&from=&to=).
	Actor, Action, Object, From, To string
}

// Link returns /audit with the page's search and page n, so a search can
// be shared and paged.
func (p auditPage) Link(n int) string {
	return searchLink("/audit", n, "actor", p.Actor, "action", p.Action, "object", p.Object, "from", p.From, "to", p.To)
}

// listAudit answers GET /audit[?actor=…&action=…&object=…&from=…&to=…&page=…]:
// who changed what, newest first; from and to are UTC days, both included.
func (s *server) listAudit(c *fiber.Ctx) error {
	p := auditPage{Actor: c.Query("actor"), Action: c.Query("action"), Object: c.Query("object"), From: c.Query("from"), To: c.Query("to")}
	f := audit.Filter{Actor: p.Actor, Action: p.Action, Object: p.Object}
	var err error
	if p.From != "" {
		if f.From, err = time.Parse(dateLayout, p.From); err != nil {
			return apperr.Invalidf("from %q is not a date (YYYY-MM-DD)", p.From)
		}
	}
	if p.To != "" {
		if f.To, err = time.Parse(dateLayout, p.To); err != nil {
			return apperr.Invalidf("to %q is not a date (YYYY-MM-DD)", p.To)
		}
		f.To = f.To.AddDate(0, 0, 1)
	}
	if p.Log, err = s.Admin.SearchAuditLog(c.UserContext(), adminOf(c).WorkspaceID, f, pageParam(c)); err != nil {
		return err
	}
	if p.Actors, err = s.actorNames(c); err != nil {
		return err
	}
	if p.Targets, err = s.objectNames(c, auditObjects(p)); err != nil {
		return err
	}
	return s.render(c, fiber.StatusOK, "audit", "Audit log", "audit", p)
}
