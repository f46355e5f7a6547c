package console

import (
	"encoding/json"
	"strconv"
	"strings"

	"github.com/gofiber/fiber/v2"

	"github.com/appruntime/appruntime/internal/admin"
	"github.com/appruntime/appruntime/internal/apperr"
	"github.com/appruntime/appruntime/internal/basetool"
	"github.com/appruntime/appruntime/internal/toolconfig"
	"github.com/appruntime/appruntime/models"
)

// toolForm is the create and edit page of a configured tool: its settings
// as the form holds them (the stored ones, or what the admin typed when a
// save was refused), the JSON documents pretty-printed in editors.
type toolForm struct {
	ID        string // "" on create
	BaseTools []string
	Agents    []admin.AgentView
	Integs    []admin.IntegrationView
	// The form's values, by field name.
	AgentID, DisplayName, BaseTool, IntegrationID  string
	Config, InputSchema, ActionSchema, Theme       string
	BundleID, BundleVersion, BindingID, ProducerID string
	AwaitExpiry                                    string
	DefaultFullscreen, AwaitReview                 bool
	// Refusal is why a save was refused, beside the field it names.
	Refusal formRefusal
}

// toolFields are the fields a toolconfig refusal may name.
var toolFields = []string{"await_expiry_seconds", "producer_tool_id", "integration_id", "bundle_version", "action_schema",
	"input_schema", "display_name", "bundle_id", "binding_id", "base_tool", "agent_id", "config", "theme"}

// Injected lists the app tool inputs the worker injects, which an
// app tool's input_schema may not require.
func (toolForm) Injected() string { return strings.Join(basetool.AppToolInjected, ",") }

// IsApp reports whether the form is of an app tool.
func (f toolForm) IsApp() bool { return f.BaseTool == models.BaseAppTool }

// newTool answers GET /tools/new[?base_tool=].
func (s *server) newTool(c *fiber.Ctx) error {
	base := c.Query("base_tool")
	if base == "" {
		base = models.BasePythonCode
	}
	return s.renderToolForm(c, fiber.StatusOK, toolForm{BaseTool: base, Config: "{}", InputSchema: "{\n  \"type\": \"object\",\n  \"properties\": {}\n}"})
}

// editTool answers GET /tools/:id/edit.
func (s *server) editTool(c *fiber.Ctx) error {
	t, err := s.Tools.Get(c.UserContext(), adminOf(c).WorkspaceID, c.Params("id"))
	if err != nil {
		return err
	}
	f := toolForm{ID: t.ID, AgentID: t.AgentID, DisplayName: t.DisplayName, BaseTool: t.BaseTool,
		Config: formJSON(t.Config), InputSchema: formJSON(t.InputSchema), ActionSchema: formJSON(t.ActionSchema), Theme: formJSON(t.Theme),
		DefaultFullscreen: t.DefaultFullscreen, AwaitReview: t.AwaitReview}
	for dst, v := range map[*string]*string{&f.IntegrationID: t.IntegrationID, &f.BundleID: t.BundleID, &f.BindingID: t.BindingID, &f.ProducerID: t.ProducerToolID} {
		if v != nil {
			*dst = *v
		}
	}
	if t.BundleVersion != nil {
		f.BundleVersion = strconv.Itoa(*t.BundleVersion)
	}
	if t.AwaitExpirySeconds != nil {
		f.AwaitExpiry = strconv.Itoa(*t.AwaitExpirySeconds)
	}
	return s.renderToolForm(c, fiber.StatusOK, f)
}

func (s *server) renderToolForm(c *fiber.Ctx, status int, f toolForm) error {
	ctx, ws := c.UserContext(), adminOf(c).WorkspaceID
	var err error
	if f.Agents, err = s.Admin.ListAgents(ctx, ws); err != nil {
		return err
	}
	if f.Integs, err = s.Admin.ListIntegrations(ctx, ws); err != nil {
		return err
	}
	f.BaseTools = basetool.Names(basetool.Configurable)
	title := "New configured tool"
	if f.ID != "" {
		title = "Edit " + f.DisplayName
	}
	return s.render(c, status, "tool_form", title, "tools", f)
}

// toolFormOf reads the posted form.
func toolFormOf(c *fiber.Ctx) toolForm {
	v := func(k string) string { return strings.TrimSpace(c.FormValue(k)) }
	return toolForm{AgentID: v("agent_id"), DisplayName: c.FormValue("display_name"), BaseTool: v("base_tool"), IntegrationID: v("integration_id"),
		Config: v("config"), InputSchema: v("input_schema"), ActionSchema: v("action_schema"), Theme: v("theme"),
		BundleID: v("bundle_id"), BundleVersion: v("bundle_version"), BindingID: v("binding_id"), ProducerID: v("producer_tool_id"),
		AwaitExpiry: v("await_expiry_seconds"), DefaultFullscreen: c.FormValue("default_fullscreen") != "", AwaitReview: c.FormValue("await_review") != ""}
}

// body is the form as the admin API's JSON body: every field, empty ones
// null (a merge patch clears them), the app tool's only on an app tool.
func (f toolForm) body() ([]byte, error) {
	m := map[string]any{"agent_id": f.AgentID, "display_name": f.DisplayName, "base_tool": f.BaseTool}
	for _, j := range []struct{ name, text string }{{"config", f.Config}, {"input_schema", f.InputSchema}, {"action_schema", f.ActionSchema}, {"theme", f.Theme}} {
		if !f.IsApp() && (j.name == "action_schema" || j.name == "theme") {
			continue
		}
		if j.text == "" {
			m[j.name] = nil
			continue
		}
		if !json.Valid([]byte(j.text)) {
			return nil, apperr.Invalidf("%s is not valid JSON", j.name)
		}
		m[j.name] = json.RawMessage(j.text)
	}
	str := func(name, v string) {
		if v == "" {
			m[name] = nil
		} else {
			m[name] = v
		}
	}
	num := func(name, v string) error {
		if v == "" {
			m[name] = nil
			return nil
		}
		n, err := strconv.Atoi(v)
		if err != nil {
			return apperr.Invalidf("%s must be a whole number", name)
		}
		m[name] = n
		return nil
	}
	if !f.IsApp() {
		str("integration_id", f.IntegrationID)
		return json.Marshal(m)
	}
	str("bundle_id", f.BundleID)
	str("binding_id", f.BindingID)
	str("producer_tool_id", f.ProducerID)
	if err := num("bundle_version", f.BundleVersion); err != nil {
		return nil, err
	}
	if err := num("await_expiry_seconds", f.AwaitExpiry); err != nil {
		return nil, err
	}
	m["default_fullscreen"], m["await_review"] = f.DefaultFullscreen, f.AwaitReview
	return json.Marshal(m)
}

// createTool answers POST /tools through toolconfig.Service.Create, as POST
// /api/admin/configured-tools does (same rules, same audit).
func (s *server) createTool(c *fiber.Ctx) error {
	a, f := adminOf(c), toolFormOf(c)
	body, err := f.body()
	if err == nil {
		var in toolconfig.Input
		if err = json.Unmarshal(body, &in); err == nil {
			var t toolconfig.View
			if t, err = s.Tools.Create(c.UserContext(), a.WorkspaceID, a.actor(), in); err == nil {
				return redirectTo(c, "/tools/"+t.ID, "tool_saved")
			}
		}
	}
	return s.toolRefused(c, f, err)
}

// saveTool answers POST /tools/:id: the form as a merge patch, as PATCH
// /api/admin/configured-tools/:id takes it.
func (s *server) saveTool(c *fiber.Ctx) error {
	a, f := adminOf(c), toolFormOf(c)
	f.ID = c.Params("id")
	body, err := f.body()
	if err == nil {
		if _, err = s.Tools.Update(c.UserContext(), a.WorkspaceID, a.actor(), f.ID, body); err == nil {
			return redirectTo(c, "/tools/"+f.ID, "tool_saved")
		}
	}
	return s.toolRefused(c, f, err)
}

// toolRefused re-renders the form with the admin's input and the refusal
// beside the field it names, with the API's status; other errors go to the
// error page.
func (s *server) toolRefused(c *fiber.Ctx, f toolForm, err error) error {
	r, refused := refuseForm(err, toolFields...)
	if !refused {
		return err
	}
	f.Refusal = r
	return s.renderToolForm(c, r.Status, f)
}

// deleteTool answers POST /tools/:id/delete.
func (s *server) deleteTool(c *fiber.Ctx) error {
	a := adminOf(c)
	if err := s.Tools.Delete(c.UserContext(), a.WorkspaceID, a.actor(), c.Params("id")); err != nil {
		return err
	}
	return redirectTo(c, "/tools", "tool_deleted")
}
