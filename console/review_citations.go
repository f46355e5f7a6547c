package console

import (
	"github.com/gofiber/fiber/v2"

	"github.com/appruntime/appruntime/internal/apperr"
	"github.com/appruntime/appruntime/internal/strictjson"
)

// reviewCitations answers POST /review/tasks/:id/citations {citation_ids}
// for the reviewer holding the task (or an admin): the task's citations
// with those ids, in order, which the host script opens for the bundle's
// open_citation. An id the task does not hold is 404 naming it, which the
// host tells the bundle as a citation_error.
func (s *server) reviewCitations(c *fiber.Ctx) error {
	d, err := s.reviewTask(c)
	if err != nil {
		return err
	}
	if s.Capabilities == nil {
		return apperr.NotImplementedf("this deployment keeps no files")
	}
	var p struct {
		CitationIDs []int64 `json:"citation_ids"`
	}
	if err := strictjson.Unmarshal(c.Body(), &p); err != nil {
		return apperr.Invalidf("body must be {citation_ids: [numbers]}: %s", err)
	}
	// A refusal reaches the host script as {"error": message} (renderError
	// answers JSON to a request that accepts it), which it tells the bundle
	// as a citation_error.
	out, err := s.Capabilities.Citations(c.UserContext(), d.ID, p.CitationIDs)
	if err != nil {
		return err
	}
	return c.JSON(fiber.Map{"citations": out})
}
