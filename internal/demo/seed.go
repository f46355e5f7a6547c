// Package demo seeds the embedded dev mode with a small, working example: a
// workspace with an admin, tokens, an agent, a demo data source and its
// integration, a binding, a bundle, an app-tool configured tool and a task
// parked on one app-tool step, all made through the domain services as an
// admin and an agent would make them. Seeding is idempotent: a second run
// finds what the first made and makes nothing new.
package demo

import (
	"bytes"
	"context"
	"crypto/sha256"
	"database/sql"
	_ "embed"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	_ "github.com/glebarez/go-sqlite" // the "sqlite" database/sql driver for the demo data source
	"gorm.io/gorm"

	"github.com/appruntime/appruntime/internal/admin"
	"github.com/appruntime/appruntime/internal/auth"
	"github.com/appruntime/appruntime/internal/bindingspec"
	"github.com/appruntime/appruntime/internal/bundle"
	"github.com/appruntime/appruntime/internal/keydetail"
	"github.com/appruntime/appruntime/internal/platform"
	"github.com/appruntime/appruntime/internal/sdk"
	"github.com/appruntime/appruntime/internal/task"
	"github.com/appruntime/appruntime/internal/toolconfig"
	"github.com/appruntime/appruntime/models"
)

//go:embed bundle/invoice-review.html
var bundleHTML []byte

// sdkURLPlaceholder is where the demo bundle imports the bundle SDK from.
const sdkURLPlaceholder = "{{APPRUNTIME_SDK_URL}}"

// BundleHTML returns the demo bundle for an API at publicAPIURL: it imports
// the bundle SDK from that API (internal/sdk), which the bundle CSP allows.
func BundleHTML(publicAPIURL string) []byte {
	return bytes.ReplaceAll(bundleHTML, []byte(sdkURLPlaceholder), []byte(strings.TrimRight(publicAPIURL, "/")+sdk.Path))
}

// Names the seed finds its objects by.
const (
	WorkspaceName   = "Demo workspace"
	AdminEmail      = "admin@demo.local"
	AgentName       = "Invoice agent"
	IntegrationName = "Demo data source (dev only)"
	BindingName     = "Invoice review binding"
	BundleName      = "invoice-review"
	ToolName        = "Invoice review"
	TaskTitle       = "Review the ACME invoices"
)

// Secrets are the dev mode's fixed credentials, kept in .appruntime so a
// restart keeps the same logins and tokens.
type Secrets struct {
	AdminPassword string `json:"admin_password"`
	HostToken     string `json:"host_token"`
	AgentToken    string `json:"agent_token"`
	AdminToken    string `json:"admin_token"`
	WebhookSecret string `json:"webhook_secret"`
}

// Info is what the seed made, by id.
type Info struct {
	WorkspaceID      string
	AdminUserID      string
	AgentID          string
	IntegrationID    string
	BindingID        string
	BundleID         string
	ConfiguredToolID string
	TaskID           string
	StepID           string
}

// Actor is who the seed's changes are recorded as, in the audit log and the feed.
const Actor = "system"

// Seed makes (or finds, by name) the demo objects through the same domain
// services the admin and agent APIs use, so the demo binding has its
// versions, the bundle its stored bytes, every change its audit entry, and
// the demo step is a real artifact parked on its await. dataSourcePath is
// the SQLite file of the demo data source, which the seed creates and then
// lets p's data sources open (that file only); p must admit sqlite
// integrations (the dev mode's platform does). A second run finds
// everything and makes nothing, except a new bundle version when the
// embedded bundle changed.
func Seed(ctx context.Context, p *platform.Platform, s Secrets, dataSourcePath string) (Info, error) {
	if err := seedDataSource(ctx, dataSourcePath); err != nil {
		return Info{}, err
	}
	if err := p.DataSources.EnableSQLite(dataSourcePath); err != nil {
		return Info{}, err
	}
	d := seeder{p: p, db: p.Store.DB.WithContext(ctx), secrets: s, dataSourcePath: dataSourcePath}
	var info Info
	steps := []struct {
		what string
		fn   func(context.Context, *Info) error
	}{
		{"workspace", d.workspace}, {"admin user", d.adminUser}, {"agent", d.agent}, {"tokens", d.tokens},
		{"integration", d.integration}, {"binding", d.binding}, {"bundle", d.bundle}, {"configured tool", d.tool}, {"task", d.task},
	}
	for _, st := range steps {
		if err := st.fn(ctx, &info); err != nil {
			return Info{}, fmt.Errorf("demo: seed %s: %w", st.what, err)
		}
	}
	return info, nil
}

// seeder finds or creates each demo object in turn.
type seeder struct {
	p              *platform.Platform
	db             *gorm.DB
	secrets        Secrets
	dataSourcePath string
}

// find loads the row matching where into dst and reports whether one exists.
func (d seeder) find(dst any, where string, args ...any) (bool, error) {
	err := d.db.Where(where, args...).Order("created_at, id").Take(dst).Error
	if errors.Is(err, gorm.ErrRecordNotFound) {
		return false, nil
	}
	return err == nil, err
}

func (d seeder) workspace(ctx context.Context, info *Info) error {
	var w models.Workspace
	found, err := d.find(&w, "name = ?", WorkspaceName)
	if err != nil || found {
		info.WorkspaceID = w.ID
		return err
	}
	// The workspace's first admin token is not kept: the demo's admin
	// token is the fixed one stored below.
	nw, err := d.p.Admin.CreateWorkspace(ctx, Actor, admin.WorkspaceInput{Name: WorkspaceName})
	info.WorkspaceID = nw.ID
	return err
}

func (d seeder) adminUser(ctx context.Context, info *Info) error {
	var u models.User
	found, err := d.find(&u, "workspace_id = ? AND email = ?", info.WorkspaceID, AdminEmail)
	if err != nil || found {
		info.AdminUserID = u.ID
		return err
	}
	v, err := d.p.Admin.CreateUser(ctx, info.WorkspaceID, Actor, admin.UserInput{
		Email: AdminEmail, Name: "Demo admin", Role: models.RoleAdmin, Password: d.secrets.AdminPassword,
	})
	info.AdminUserID = v.ID
	return err
}

func (d seeder) agent(ctx context.Context, info *Info) error {
	var a models.Agent
	found, err := d.find(&a, "workspace_id = ? AND name = ?", info.WorkspaceID, AgentName)
	if err != nil || found {
		info.AgentID = a.ID
		return err
	}
	v, err := d.p.Admin.CreateAgent(ctx, info.WorkspaceID, Actor, admin.AgentInput{
		Name: AgentName,
		KeyDefinitions: []keydetail.Definition{
			{Key: "vendor", Description: "The vendor of the invoice"},
			{Key: "total_amount", Description: "The invoice total", Type: "number"},
		},
		SummaryInstructions: "Summarise the invoice review in one sentence.",
	})
	if err != nil {
		return err
	}
	info.AgentID = v.ID
	_, err = d.p.Admin.SetWebhookSecret(ctx, info.WorkspaceID, Actor, v.ID, d.secrets.WebhookSecret)
	return err
}

// tokens stores the fixed host, agent and admin tokens that are not stored yet.
func (d seeder) tokens(ctx context.Context, info *Info) error {
	for _, t := range []struct {
		in     admin.TokenInput
		secret string
	}{
		{admin.TokenInput{Scope: models.ScopeHost, Name: "demo host token", UserID: &info.AdminUserID}, d.secrets.HostToken},
		{admin.TokenInput{Scope: models.ScopeAgent, Name: "demo agent token", AgentID: &info.AgentID}, d.secrets.AgentToken},
		{admin.TokenInput{Scope: models.ScopeAdmin, Name: "demo admin token"}, d.secrets.AdminToken},
	} {
		var tok models.APIToken
		found, err := d.find(&tok, "token_hash = ?", auth.HashToken(t.secret))
		if err != nil {
			return err
		}
		if found {
			continue
		}
		if _, err := d.p.Admin.StoreToken(ctx, info.WorkspaceID, Actor, t.in, t.secret); err != nil {
			return err
		}
	}
	return nil
}

func (d seeder) integration(ctx context.Context, info *Info) error {
	var i models.Integration
	found, err := d.find(&i, "workspace_id = ? AND name = ?", info.WorkspaceID, IntegrationName)
	if err != nil || found {
		info.IntegrationID = i.ID
		return err
	}
	dsn, err := json.Marshal(d.dataSourcePath)
	if err != nil {
		return err
	}
	v, err := d.p.Admin.CreateIntegration(ctx, info.WorkspaceID, Actor, admin.IntegrationInput{
		Name: IntegrationName, Kind: admin.KindSQLite, Secrets: map[string]json.RawMessage{"dsn": dsn},
	})
	info.IntegrationID = v.ID
	return err
}

func (d seeder) binding(ctx context.Context, info *Info) error {
	var b models.Binding
	found, err := d.find(&b, "workspace_id = ? AND name = ?", info.WorkspaceID, BindingName)
	if err != nil || found {
		info.BindingID = b.ID
		return err
	}
	spec, err := json.Marshal(Spec())
	if err != nil {
		return err
	}
	v, err := d.p.Bindings.Create(ctx, info.WorkspaceID, Actor, bindingspec.Input{
		Name: BindingName, BindingKind: bindingspec.KindPostgres, IntegrationID: info.IntegrationID, AllowedOperations: spec,
	})
	info.BindingID = v.ID
	return err
}

// bundle uploads the embedded bundle as version 1, or as the next version
// when the stored newest version has other bytes (a developer changed it).
func (d seeder) bundle(ctx context.Context, info *Info) error {
	var b models.Bundle
	found, err := d.find(&b, "workspace_id = ? AND name = ?", info.WorkspaceID, BundleName)
	if err != nil {
		return err
	}
	html := BundleHTML(d.p.Config.PublicAPIURL)
	up := bundle.Upload{Name: BundleName, ContentType: bundle.ContentTypeHTML, Content: html}
	if !found {
		v, err := d.p.Bundles.Create(ctx, info.WorkspaceID, Actor, up)
		info.BundleID = v.ID
		return err
	}
	info.BundleID = b.ID
	latest, err := bundle.Latest(ctx, d.db, info.WorkspaceID, b.ID)
	if err != nil {
		return err
	}
	sum := sha256.Sum256(html)
	if latest.SHA256 == hex.EncodeToString(sum[:]) {
		return nil
	}
	_, err = d.p.Bundles.AddVersion(ctx, info.WorkspaceID, Actor, b.ID, up)
	return err
}

func (d seeder) tool(ctx context.Context, info *Info) error {
	var t models.ConfiguredTool
	found, err := d.find(&t, "agent_id = ? AND display_name = ?", info.AgentID, ToolName)
	if err != nil || found {
		info.ConfiguredToolID = t.ID
		return err
	}
	v, err := d.p.Tools.Create(ctx, info.WorkspaceID, Actor, toolconfig.Input{
		AgentID: info.AgentID, DisplayName: ToolName, BaseTool: models.BaseAppTool,
		BundleID: &info.BundleID, BindingID: &info.BindingID, AwaitReview: true,
		Theme:        json.RawMessage(`{"accent": "#2456d6"}`),
		ActionSchema: json.RawMessage(`{"approve_invoice": {"label": "Approve and resume"}}`),
		InputSchema: json.RawMessage(`{"type": "object", "properties": {"report_id": {"type": "integer"}},
			"additionalProperties": false}`),
	})
	info.ConfiguredToolID = v.ID
	return err
}

// task creates the demo task and its app-tool step the way an agent does,
// which parks the task on the step's await. A task left without its step
// (a start that stopped between the two) gets it on the next start.
func (d seeder) task(ctx context.Context, info *Info) error {
	caller := task.Caller{WorkspaceID: info.WorkspaceID, AgentID: info.AgentID, Actor: Actor}
	var t models.Task
	found, err := d.find(&t, "workspace_id = ? AND agent_id = ? AND title = ?", info.WorkspaceID, info.AgentID, TaskTitle)
	if err != nil {
		return err
	}
	if !found {
		v, err := d.p.Tasks.Create(ctx, caller, task.TaskInput{Title: TaskTitle})
		if err != nil {
			return err
		}
		t.ID = v.ID
	}
	info.TaskID = t.ID
	var step models.Step
	found, err = d.find(&step, "task_id = ? AND kind = ?", t.ID, models.StepAppTool)
	if err != nil || found {
		info.StepID = step.ID
		return err
	}
	v, err := d.p.Tasks.AddAppToolStep(ctx, caller, t.ID, task.StepInput{
		ConfiguredToolID: info.ConfiguredToolID, Params: json.RawMessage(`{"report_id": 59137}`),
	})
	info.StepID = v.ID
	return err
}

// Spec is the demo binding: read the invoices, hold one, and approve the
// review (which records a decision and releases the parked task).
func Spec() bindingspec.Spec {
	return bindingspec.Spec{
		Reads: []bindingspec.Read{{
			Op: "list_invoices", Table: "invoices",
			Columns:    []string{"id", "vendor", "amount", "status"},
			Filterable: []string{"status", "vendor"},
			OrderBy:    []bindingspec.Order{{Column: "id"}},
			Limit:      50,
		}},
		Writes: []bindingspec.Write{
			{Op: "set_status", Table: "invoices", Mode: bindingspec.ModeUpdate, KeyColumns: []string{"id"}, Columns: []string{"status"}},
			{Op: "record_decision", Table: "decisions", Mode: bindingspec.ModeInsert, Columns: []string{"decision", "note"},
				FixedValues: map[string]any{"task_id": "{{task_id}}"}},
		},
		Actions: []bindingspec.Action{{
			Name: "approve_invoice", Writes: []string{"record_decision"}, FeedEvent: "invoice_approved", ResolvesAwait: true,
		}},
	}
}

// seedDataSource creates the demo data source's tables and rows once.
func seedDataSource(ctx context.Context, path string) error {
	db, err := sql.Open("sqlite", path+"?_pragma=journal_mode(WAL)&_pragma=busy_timeout(10000)")
	if err != nil {
		return fmt.Errorf("demo: open data source: %w", err)
	}
	defer db.Close()
	stmts := []string{
		`CREATE TABLE IF NOT EXISTS invoices (id INTEGER PRIMARY KEY, vendor TEXT NOT NULL, amount REAL NOT NULL, status TEXT NOT NULL)`,
		`CREATE TABLE IF NOT EXISTS decisions (id INTEGER PRIMARY KEY AUTOINCREMENT, task_id TEXT NOT NULL, decision TEXT NOT NULL, note TEXT, created_at TEXT NOT NULL DEFAULT CURRENT_TIMESTAMP)`,
		`INSERT OR IGNORE INTO invoices (id, vendor, amount, status) VALUES
			(1, 'ACME Corp', 1250.00, 'pending'), (2, 'ACME Corp', 89.90, 'pending'), (3, 'Globex', 4310.50, 'pending')`,
	}
	for _, s := range stmts {
		if _, err := db.ExecContext(ctx, s); err != nil {
			return fmt.Errorf("demo: seed data source: %w", err)
		}
	}
	return nil
}
