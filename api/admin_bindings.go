package api

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"

	"github.com/gofiber/fiber/v2"

	"github.com/appruntime/appruntime/internal/apperr"
	"github.com/appruntime/appruntime/internal/binding"
	"github.com/appruntime/appruntime/internal/bindingspec"
	"github.com/appruntime/appruntime/internal/strictjson"
	"github.com/appruntime/appruntime/models"
)

// adminBindingRoutes mounts /api/admin/bindings: an admin token's workspace
// and nothing else.
func (s *server) adminBindingRoutes(app *fiber.App) {
	admin := s.requireToken(models.ScopeAdmin)
	app.Get("/api/admin/bindings", admin, s.listBindings)
	app.Post("/api/admin/bindings", admin, s.createBinding)
	app.Get("/api/admin/bindings/:id", admin, s.getBinding)
	app.Patch("/api/admin/bindings/:id", admin, s.patchBinding)
	app.Put("/api/admin/bindings/:id", admin, s.putBinding)
	app.Delete("/api/admin/bindings/:id", admin, s.deleteBinding)
	app.Get("/api/admin/bindings/:id/versions", admin, s.listBindingVersions)
	app.Post("/api/admin/bindings/:id/versions/:version/restore", admin, s.restoreBindingVersion)
}

// bindingBody is the JSON an admin sends. The read-only fields a GET returns
// are accepted so that a fetched binding can be edited and sent back whole;
// "version", when present, is the version the edit started from.
type bindingBody struct {
	ID                *string         `json:"id"`
	Name              *string         `json:"name"`
	BindingKind       *string         `json:"binding_kind"`
	IntegrationID     json.RawMessage `json:"integration_id"` // absent keeps, null clears
	AllowedOperations json.RawMessage `json:"allowed_operations"`
	Version           *int            `json:"version"`
	CreatedAt         json.RawMessage `json:"created_at"`
	UpdatedAt         json.RawMessage `json:"updated_at"`
}

// decodeBindingBody parses the body strictly: one JSON object, no unknown
// fields, no key twice.
func decodeBindingBody(c *fiber.Ctx) (bindingBody, error) {
	var b bindingBody
	body := bytes.TrimSpace(c.Body())
	if len(body) == 0 || body[0] != '{' {
		return b, apperr.Invalidf("the body must be a JSON object with name, binding_kind, integration_id and allowed_operations")
	}
	if err := strictjson.Unmarshal(body, &b); err != nil {
		return b, apperr.Invalidf("bad request body: %s", err)
	}
	return b, nil
}

// integrationID reads integration_id: set reports whether the body has the
// field at all; null reads as "" (no integration).
func (b bindingBody) integrationID() (id string, set bool, err error) {
	if b.IntegrationID == nil {
		return "", false, nil
	}
	var v *string
	if err := json.Unmarshal(b.IntegrationID, &v); err != nil {
		return "", true, apperr.Invalidf("integration_id must be a string or null")
	}
	if v != nil {
		id = *v
	}
	return id, true, nil
}

// readOnlyBindingFields are the fields a GET returns that an edit may send
// back: id must be the path's, version is the version the edit started
// from, the times are ignored.
var readOnlyBindingFields = []string{"id", "version", "created_at", "updated_at"}

// contentBindingFields are the fields an edit changes (bindingspec.Input's).
var contentBindingFields = []string{"name", "binding_kind", "integration_id", "allowed_operations"}

// patch turns the body (raw, as b was decoded from) into a binding.Patch: a
// JSON merge patch of the content fields (strictjson.MergeInto, as every
// admin entity is patched) and the version the edit started from. whole
// (PUT) names every content field, an absent one as null (cleared).
func (b bindingBody) patch(raw []byte, pathID string, whole bool) (binding.Patch, error) {
	var p binding.Patch
	if b.ID != nil && *b.ID != pathID {
		return p, apperr.Invalidf("id %q in the body does not match the binding %s in the path", *b.ID, pathID)
	}
	if _, _, err := b.integrationID(); err != nil {
		return p, err
	}
	if b.Version != nil {
		if *b.Version <= 0 {
			return p, apperr.Invalidf("version must be the positive version the edit started from")
		}
		p.ExpectedVersion = *b.Version
	}
	var fields map[string]json.RawMessage
	if err := strictjson.Unmarshal(raw, &fields); err != nil {
		return p, apperr.Invalidf("bad request body: %s", err)
	}
	for _, k := range readOnlyBindingFields {
		delete(fields, k)
	}
	if whole {
		for _, k := range contentBindingFields {
			if _, ok := fields[k]; !ok {
				fields[k] = json.RawMessage("null")
			}
		}
	}
	merge, err := json.Marshal(fields)
	if err != nil {
		return p, fmt.Errorf("api: encode binding patch: %w", err)
	}
	p.Merge = merge
	return p, nil
}

// bindingActor names the caller in version history and the audit log.
func bindingActor(c *fiber.Ctx) string { return "token:" + principalOf(c).TokenID }

func (s *server) listBindings(c *fiber.Ctx) error {
	list, err := s.Bindings.List(c.UserContext(), principalOf(c).WorkspaceID)
	if err != nil {
		return err
	}
	return c.JSON(fiber.Map{"bindings": list})
}

func (s *server) createBinding(c *fiber.Ctx) error {
	b, err := decodeBindingBody(c)
	if err != nil {
		return err
	}
	integ, _, err := b.integrationID()
	if err != nil {
		return err
	}
	in := bindingspec.Input{IntegrationID: integ, AllowedOperations: b.AllowedOperations}
	if b.Name != nil {
		in.Name = *b.Name
	}
	if b.BindingKind != nil {
		in.BindingKind = *b.BindingKind
	}
	out, err := s.Bindings.Create(c.UserContext(), principalOf(c).WorkspaceID, bindingActor(c), in)
	if err != nil {
		return err
	}
	return c.Status(fiber.StatusCreated).JSON(out)
}

func (s *server) getBinding(c *fiber.Ctx) error {
	out, err := s.Bindings.Get(c.UserContext(), principalOf(c).WorkspaceID, c.Params("id"))
	if err != nil {
		return err
	}
	return c.JSON(out)
}

func (s *server) patchBinding(c *fiber.Ctx) error { return s.updateBinding(c, false) }

func (s *server) putBinding(c *fiber.Ctx) error { return s.updateBinding(c, true) }

func (s *server) updateBinding(c *fiber.Ctx, whole bool) error {
	b, err := decodeBindingBody(c)
	if err != nil {
		return err
	}
	p, err := b.patch(bytes.TrimSpace(c.Body()), c.Params("id"), whole)
	if err != nil {
		return err
	}
	out, err := s.Bindings.Update(c.UserContext(), principalOf(c).WorkspaceID, c.Params("id"), bindingActor(c), p)
	if err != nil {
		return err
	}
	return c.JSON(out)
}

func (s *server) deleteBinding(c *fiber.Ctx) error {
	if err := s.Bindings.Delete(c.UserContext(), principalOf(c).WorkspaceID, c.Params("id"), bindingActor(c)); err != nil {
		return err
	}
	return c.SendStatus(fiber.StatusNoContent)
}

func (s *server) listBindingVersions(c *fiber.Ctx) error {
	versions, err := s.Bindings.Versions(c.UserContext(), principalOf(c).WorkspaceID, c.Params("id"))
	if err != nil {
		return err
	}
	return c.JSON(fiber.Map{"versions": versions})
}

func (s *server) restoreBindingVersion(c *fiber.Ctx) error {
	v, err := strconv.Atoi(c.Params("version"))
	if err != nil || v <= 0 {
		return apperr.Invalidf("version %q is not a version number", c.Params("version"))
	}
	out, err := s.Bindings.Restore(c.UserContext(), principalOf(c).WorkspaceID, c.Params("id"), v, bindingActor(c))
	if err != nil {
		return err
	}
	return c.JSON(out)
}
