package console

import (
	"github.com/gofiber/fiber/v2"

	"github.com/appruntime/appruntime/internal/admin"
)

// objectPaths are the console pages of the objects an audit entry can
// target, by kind.
var objectPaths = map[string]string{
	"agent":           "/agents/",
	"user":            "/users/",
	"binding":         "/bindings/",
	"configured_tool": "/tools/",
	"integration":     "/integrations/",
	"bundle":          "/bundles/",
}

// objectHref returns the console page of an object of kind, or "" for a
// kind without one of its own (a token is on the Tokens page, an await on
// its task's).
func objectHref(kind, id string) string {
	if p, ok := objectPaths[kind]; ok && id != "" {
		return p + id
	}
	if kind == "token" {
		return "/tokens"
	}
	return ""
}

// auditObjects are the targets of a page of the audit log, to name them in
// one batch.
func auditObjects(p auditPage) []admin.Object {
	out := make([]admin.Object, 0, len(p.Log.Entries))
	for _, e := range p.Log.Entries {
		out = append(out, admin.Object{Kind: e.TargetType, ID: e.TargetID})
	}
	return out
}

// objectNames names objects of the admin's workspace in one batch (one
// query per kind), keyed "<kind>:<id>" for a template's index.
func (s *server) objectNames(c *fiber.Ctx, objects []admin.Object) (map[string]string, error) {
	names, err := s.Admin.ObjectNames(c.UserContext(), adminOf(c).WorkspaceID, objects)
	if err != nil {
		return nil, err
	}
	out := make(map[string]string, len(names))
	for o, name := range names {
		out[o.Kind+":"+o.ID] = name
	}
	return out, nil
}
