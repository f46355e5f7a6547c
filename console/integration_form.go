package console

import (
	"encoding/json"
	"slices"
	"strings"

	"github.com/gofiber/fiber/v2"

	"github.com/appruntime/appruntime/internal/admin"
	"github.com/appruntime/appruntime/internal/apperr"
)

// integrationForm is the create and edit page of an integration. Secrets
// are write-only: the form has inputs to set or replace them, and the page
// shows only which are set (docs/admins.md#the-console).
type integrationForm struct {
	// Integration is the stored integration on edit (ID empty on create).
	Integration admin.IntegrationView
	// Kinds are the kinds a new integration may have.
	Kinds []string
	// Name, Kind, BaseURL and Config are the form's values: the stored ones,
	// or what the admin typed when a save was refused.
	Name, Kind, BaseURL, Config string
	// OAuth are the non-secret oauth_config fields the admin typed
	// (client_id, scope, auth_style, username) when a save was refused.
	OAuth map[string]string
	// Refusal is why a save or a deletion was refused, beside the field it
	// names ("delete" for a deletion).
	Refusal formRefusal
	// Tested, Passed and Result are a "test connection" outcome.
	Tested bool
	Passed bool
	Result string
}

// integrationFields are the fields an admin error may name.
var integrationFields = []string{"secrets.oauth_config", "secrets.bearer_token", "secrets.dsn", "secrets.env", "secrets", "base_url", "config", "name", "kind"}

// oauthFields are the oauth_config keys the form takes, and oauthSecret
// those among them never rendered back.
var (
	oauthFields = []string{"client_id", "client_secret", "username", "password", "scope", "auth_style"}
	oauthSecret = map[string]bool{"client_secret": true, "password": true}
)

// newIntegration answers GET /integrations/new.
func (s *server) newIntegration(c *fiber.Ctx) error {
	kind := c.Query("kind")
	if kind == "" {
		kind = admin.KindPostgres
	}
	return s.renderIntegrationForm(c, fiber.StatusOK, integrationForm{Kind: kind, Config: "{}"})
}

// editIntegration answers GET /integrations/:id.
func (s *server) editIntegration(c *fiber.Ctx) error {
	i, err := s.Admin.GetIntegration(c.UserContext(), adminOf(c).WorkspaceID, c.Params("id"))
	if err != nil {
		return err
	}
	return s.renderIntegrationForm(c, fiber.StatusOK, integrationForm{Integration: i, Name: i.Name, Kind: i.Kind, BaseURL: i.BaseURL, Config: formJSON(i.Config)})
}

// renderIntegrationForm renders the form page.
func (s *server) renderIntegrationForm(c *fiber.Ctx, status int, f integrationForm) error {
	f.Kinds = admin.IntegrationKinds
	title := "New integration"
	if f.Integration.ID != "" {
		title = "Integration " + f.Integration.Name
	}
	return s.render(c, status, "integration", title, "integrations", f)
}

// integrationInput reads the form into the admin API's input; secrets holds
// only the secret fields that were filled in, so that a blank one keeps the
// stored secret on edit. The error names the field it refuses.
func integrationInput(c *fiber.Ctx) (admin.IntegrationInput, map[string]string, error) {
	in := admin.IntegrationInput{
		Name: c.FormValue("name"), Kind: c.FormValue("kind"), BaseURL: strings.TrimSpace(c.FormValue("base_url")),
		Secrets: map[string]json.RawMessage{},
	}
	if cfg := strings.TrimSpace(c.FormValue("config")); cfg != "" {
		in.Config = json.RawMessage(cfg)
		if !json.Valid(in.Config) {
			return in, nil, apperr.Invalidf("config is not valid JSON")
		}
	}
	for _, k := range []string{"dsn", "bearer_token"} {
		if v := c.FormValue("secret_" + k); v != "" {
			raw, _ := json.Marshal(v)
			in.Secrets[k] = raw
		}
	}
	if env := strings.TrimSpace(c.FormValue("secret_env")); env != "" {
		if !json.Valid([]byte(env)) {
			return in, nil, apperr.Invalidf("secrets.env is not valid JSON: an object of NAME → string is expected")
		}
		in.Secrets["env"] = json.RawMessage(env)
	}
	oauth, shown := map[string]string{}, map[string]string{}
	for _, k := range oauthFields {
		if v := strings.TrimSpace(c.FormValue("oauth_" + k)); v != "" {
			oauth[k] = v
			if !oauthSecret[k] {
				shown[k] = v
			}
		}
	}
	if len(oauth) > 0 {
		raw, _ := json.Marshal(oauth)
		in.Secrets["oauth_config"] = raw
	}
	return in, shown, nil
}

// createIntegration answers POST /integrations, creating through the admin
// service as POST /api/admin/integrations does (same checks, same audit).
func (s *server) createIntegration(c *fiber.Ctx) error {
	a := adminOf(c)
	in, shown, err := integrationInput(c)
	if err == nil {
		var i admin.IntegrationView
		if i, err = s.Admin.CreateIntegration(c.UserContext(), a.WorkspaceID, a.actor(), in); err == nil {
			return redirectTo(c, "/integrations/"+i.ID, "integration_saved")
		}
	}
	f := integrationForm{Name: in.Name, Kind: in.Kind, BaseURL: in.BaseURL, Config: string(in.Config), OAuth: shown}
	return s.integrationRefused(c, f, err)
}

// saveIntegration answers POST /integrations/:id: a merge patch as PATCH
// /api/admin/integrations/:id takes; a blank secret field keeps the stored
// secret, and a ticked "remove" drops it.
func (s *server) saveIntegration(c *fiber.Ctx) error {
	ctx, a := c.UserContext(), adminOf(c)
	current, err := s.Admin.GetIntegration(ctx, a.WorkspaceID, c.Params("id"))
	if err != nil {
		return err
	}
	in, shown, err := integrationInput(c)
	if err == nil {
		for _, k := range current.SecretsSet {
			if c.FormValue("remove_"+k) != "" {
				if _, replaced := in.Secrets[k]; !replaced {
					in.Secrets[k] = json.RawMessage("null")
				}
			}
		}
		patch := map[string]any{"name": in.Name, "base_url": in.BaseURL, "config": in.Config, "secrets": in.Secrets}
		if in.Config == nil {
			patch["config"] = nil
		}
		body, _ := json.Marshal(patch)
		if _, err = s.Admin.UpdateIntegration(ctx, a.WorkspaceID, a.actor(), current.ID, body); err == nil {
			return redirectTo(c, "/integrations/"+current.ID, "integration_saved")
		}
	}
	f := integrationForm{Integration: current, Name: in.Name, Kind: current.Kind, BaseURL: in.BaseURL, Config: string(in.Config), OAuth: shown}
	return s.integrationRefused(c, f, err)
}

// integrationRefused re-renders the form with the admin's input and the
// refusal beside the field it names, with the API's status; other errors
// go to the error page.
func (s *server) integrationRefused(c *fiber.Ctx, f integrationForm, err error) error {
	r, refused := refuseForm(err, integrationFields...)
	if !refused {
		return err
	}
	f.Refusal = r
	return s.renderIntegrationForm(c, r.Status, f)
}

// deleteIntegration answers POST /integrations/:id/delete. The admin service
// refuses (409) while a binding or configured tool uses the integration;
// the refusal is shown on its page.
func (s *server) deleteIntegration(c *fiber.Ctx) error {
	ctx, a := c.UserContext(), adminOf(c)
	err := s.Admin.DeleteIntegration(ctx, a.WorkspaceID, a.actor(), c.Params("id"))
	if code, status, msg := apperr.Public(err); err != nil && code == apperr.Conflict {
		i, gerr := s.Admin.GetIntegration(ctx, a.WorkspaceID, c.Params("id"))
		if gerr != nil {
			return gerr
		}
		return s.renderIntegrationForm(c, status, integrationForm{Integration: i, Name: i.Name, Kind: i.Kind, BaseURL: i.BaseURL, Config: formJSON(i.Config),
			Refusal: formRefusal{Status: status, Field: "delete", Message: msg}})
	}
	if err != nil {
		return err
	}
	return redirectTo(c, "/integrations", "integration_deleted")
}

// formJSON is a stored JSON document for a textarea: indented, "" for none.
func formJSON(raw json.RawMessage) string {
	if len(raw) == 0 || string(raw) == "null" {
		return ""
	}
	return prettyJSON(raw)
}

// Set reports whether the stored integration has secret k set.
func (f integrationForm) Set(k string) bool {
	return slices.Contains(f.Integration.SecretsSet, k)
}

// Uses reports whether the form's kind takes secret k.
func (f integrationForm) Uses(k string) bool {
	switch k {
	case "dsn":
		return f.Kind == admin.KindPostgres || f.Kind == admin.KindMSSQL || f.Kind == admin.KindSQLite
	case "bearer_token", "oauth_config":
		return f.Kind == admin.KindREST
	case "env":
		return f.Kind == admin.KindComponent
	}
	return false
}
