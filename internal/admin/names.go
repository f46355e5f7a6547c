package admin

import (
	"context"
	"fmt"

	"github.com/appruntime/appruntime/models"
)

// Object is a thing of a workspace that a page names by its kind (an audit
// entry's target type: "agent", "user", "token", "binding",
// "configured_tool", "integration", "bundle") and id.
type Object struct{ Kind, ID string }

// objectTables are the kinds ObjectNames names: the table of each and the
// column that names a row.
var objectTables = map[string]struct{ table, column string }{
	"agent":           {"agents", "name"},
	"user":            {"users", "email"},
	"token":           {"api_tokens", "name"},
	"binding":         {"bindings", "name"},
	"configured_tool": {"configured_tools", "display_name"},
	"integration":     {"integrations", "name"},
	"bundle":          {"bundles", "name"},
}

// ObjectNames returns the names of the objects of the workspace among
// objects, one query per kind present (never one per object), so a page
// of a hundred rows costs at most seven queries. An object of another
// workspace, one gone since, an unnamed token and a kind without names are
// left out: the page shows their ids.
func (s *Service) ObjectNames(ctx context.Context, workspaceID string, objects []Object) (map[Object]string, error) {
	ids := map[string][]string{}
	for _, o := range objects {
		if _, ok := objectTables[o.Kind]; ok && models.IsID(o.ID) {
			ids[o.Kind] = append(ids[o.Kind], o.ID)
		}
	}
	out := map[Object]string{}
	db := s.st.DB.WithContext(ctx)
	for kind, list := range ids {
		t := objectTables[kind]
		var rows []struct{ ID, Name string }
		err := db.Table(t.table).Select("id, "+t.column+" AS name").
			Where("workspace_id = ? AND id IN ?", workspaceID, list).Scan(&rows).Error
		if err != nil {
			return nil, fmt.Errorf("admin: names of %s: %w", t.table, err)
		}
		for _, r := range rows {
			if r.Name != "" {
				out[Object{kind, r.ID}] = r.Name
			}
		}
	}
	return out, nil
}

// ActorNames maps every actor of the workspace ("user:<id>", "agent:<id>",
// "token:<id>") to how a person reads it: a user's email, "agent " and the
// agent's name, a token's name with "(token)", or, for an unnamed token,
// whom it acts for. One query per kind, whatever the page shows; an actor
// not in the map ("system", a deleted token) is shown as it is.
func (s *Service) ActorNames(ctx context.Context, workspaceID string) (map[string]string, error) {
	db := s.st.DB.WithContext(ctx)
	var users []models.User
	if err := db.Select("id", "email").Where("workspace_id = ?", workspaceID).Find(&users).Error; err != nil {
		return nil, fmt.Errorf("admin: user names: %w", err)
	}
	var agents []models.Agent
	if err := db.Select("id", "name").Where("workspace_id = ?", workspaceID).Find(&agents).Error; err != nil {
		return nil, fmt.Errorf("admin: agent names: %w", err)
	}
	var tokens []models.APIToken
	err := db.Select("id", "name", "scope", "user_id", "agent_id").Where("workspace_id = ?", workspaceID).Find(&tokens).Error
	if err != nil {
		return nil, fmt.Errorf("admin: token names: %w", err)
	}
	names := make(map[string]string, len(users)+len(agents)+len(tokens))
	for _, u := range users {
		names["user:"+u.ID] = u.Email
	}
	for _, a := range agents {
		names["agent:"+a.ID] = "agent " + a.Name
	}
	for _, t := range tokens {
		switch {
		case t.Name != "":
			names["token:"+t.ID] = t.Name + " (token)"
		case t.UserID != nil && names["user:"+*t.UserID] != "":
			names["token:"+t.ID] = names["user:"+*t.UserID] + " (" + t.Scope + " token)"
		case t.AgentID != nil && names["agent:"+*t.AgentID] != "":
			names["token:"+t.ID] = names["agent:"+*t.AgentID] + " (" + t.Scope + " token)"
		}
	}
	return names, nil
}
