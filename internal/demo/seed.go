// Package demo seeds the embedded dev mode with a small, working example: a
// workspace with an admin, tokens, an agent, a demo data source and its
// integration, a binding, a bundle, an app-tool configured tool and a task
// parked on one app-tool step. Seeding is idempotent: a second run finds
// what the first made and makes nothing new.
package demo

import (
	"context"
	"crypto/sha256"
	"database/sql"
	_ "embed"
	"encoding/hex"
	"errors"
	"fmt"
	"reflect"

	_ "github.com/glebarez/go-sqlite" // the "sqlite" database/sql driver for the demo data source
	"gorm.io/gorm"

	"github.com/appruntime/appruntime/internal/auth"
	"github.com/appruntime/appruntime/internal/binding"
	"github.com/appruntime/appruntime/internal/crypt"
	"github.com/appruntime/appruntime/models"
)

//go:embed bundle/invoice-review.html
var bundleHTML []byte

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

// Seed makes (or finds) the demo objects. dataSourcePath is the SQLite file of
// the demo data source; box seals the integration's and the agent's secrets.
func Seed(ctx context.Context, db *gorm.DB, box *crypt.Box, s Secrets, dataSourcePath string) (Info, error) {
	if err := seedDataSource(ctx, dataSourcePath); err != nil {
		return Info{}, err
	}
	var info Info
	err := db.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		ws := models.Workspace{ID: models.NewID(), Name: WorkspaceName}
		if err := firstOrCreate(tx, &ws, "name = ?", WorkspaceName); err != nil {
			return err
		}
		info.WorkspaceID = ws.ID

		hash, err := auth.HashPassword(s.AdminPassword)
		if err != nil {
			return err
		}
		admin := models.User{ID: models.NewID(), WorkspaceID: ws.ID, Email: AdminEmail, Name: "Demo admin", Role: models.RoleAdmin, PasswordHash: hash}
		if err := firstOrCreate(tx, &admin, "email = ?", AdminEmail); err != nil {
			return err
		}
		info.AdminUserID = admin.ID

		webhookSecret, err := box.Seal([]byte(s.WebhookSecret))
		if err != nil {
			return err
		}
		agent := models.Agent{
			ID: models.NewID(), WorkspaceID: ws.ID, Name: AgentName,
			KeyDefinitions: models.MustJSON([]map[string]string{
				{"key": "vendor", "description": "The vendor of the invoice"},
				{"key": "total_amount", "description": "The invoice total"},
			}),
			SummaryInstructions: "Summarise the invoice review in one sentence.",
			WebhookSecretEnc:    webhookSecret,
		}
		if err := firstOrCreate(tx, &agent, "workspace_id = ? AND name = ?", ws.ID, AgentName); err != nil {
			return err
		}
		info.AgentID = agent.ID

		for _, t := range []struct{ scope, name, secret string }{
			{models.ScopeHost, "demo host token", s.HostToken},
			{models.ScopeAgent, "demo agent token", s.AgentToken},
			{models.ScopeAdmin, "demo admin token", s.AdminToken},
		} {
			var n int64
			if err := tx.Model(&models.APIToken{}).Where("token_hash = ?", auth.HashToken(t.secret)).Count(&n).Error; err != nil {
				return err
			}
			if n > 0 {
				continue
			}
			var userID, agentID *string
			switch t.scope {
			case models.ScopeHost:
				userID = &admin.ID
			case models.ScopeAgent:
				agentID = &agent.ID
			}
			if _, err := auth.StoreToken(ctx, tx, ws.ID, t.scope, t.name, t.secret, userID, agentID); err != nil {
				return err
			}
		}

		secrets, err := box.SealJSON(map[string]string{"dsn": dataSourcePath})
		if err != nil {
			return err
		}
		integ := models.Integration{ID: models.NewID(), WorkspaceID: ws.ID, Name: IntegrationName, Kind: "sqlite", Config: models.MustJSON(map[string]any{"dev_only": true}), SecretsEnc: secrets}
		if err := firstOrCreate(tx, &integ, "workspace_id = ? AND name = ?", ws.ID, IntegrationName); err != nil {
			return err
		}
		info.IntegrationID = integ.ID

		b := models.Binding{ID: models.NewID(), WorkspaceID: ws.ID, Name: BindingName, BindingKind: binding.KindPostgres,
			IntegrationID: &integ.ID, AllowedOperations: models.MustJSON(Spec()), Version: 1}
		if err := firstOrCreate(tx, &b, "workspace_id = ? AND name = ?", ws.ID, BindingName); err != nil {
			return err
		}
		info.BindingID = b.ID

		sum := sha256.Sum256(bundleHTML)
		bundle := models.Bundle{ID: models.NewID(), Version: 1, WorkspaceID: ws.ID, Name: BundleName,
			SHA256: hex.EncodeToString(sum[:]), ContentType: "text/html; charset=utf-8", Size: int64(len(bundleHTML))}
		bundle.StorageKey = "bundles/" + bundle.ID + "/1"
		if err := firstOrCreate(tx, &bundle, "workspace_id = ? AND name = ?", ws.ID, BundleName); err != nil {
			return err
		}
		blob := models.Blob{Key: bundle.StorageKey, Content: bundleHTML}
		if err := firstOrCreate(tx, &blob, "key = ?", bundle.StorageKey); err != nil {
			return err
		}
		info.BundleID = bundle.ID

		tool := models.ConfiguredTool{ID: models.NewID(), WorkspaceID: ws.ID, AgentID: agent.ID, DisplayName: ToolName,
			BaseTool: models.BaseAppTool, BundleID: &bundle.ID, BindingID: &b.ID, AwaitReview: true,
			Theme:        models.MustJSON(map[string]string{"accent": "#2456d6"}),
			ActionSchema: models.MustJSON(map[string]any{"approve_invoice": map[string]any{"label": "Approve and resume"}}),
			InputSchema: models.MustJSON(map[string]any{
				"type": "object", "properties": map[string]any{"report_id": map[string]any{"type": "integer"}},
				"additionalProperties": false,
			})}
		if err := firstOrCreate(tx, &tool, "agent_id = ? AND display_name = ?", agent.ID, ToolName); err != nil {
			return err
		}
		info.ConfiguredToolID = tool.ID

		task := models.Task{ID: models.NewID(), WorkspaceID: ws.ID, AgentID: agent.ID, Title: TaskTitle, Status: models.TaskWaitingForInput}
		created, err := createIfMissing(tx, &task, "workspace_id = ? AND title = ?", ws.ID, TaskTitle)
		if err != nil {
			return err
		}
		info.TaskID = task.ID
		var step models.Step
		if created {
			step = models.Step{ID: models.NewID(), TaskID: task.ID, Kind: models.StepAppTool, ConfiguredToolID: &tool.ID,
				Status: models.StepCompleted, Input: models.MustJSON(map[string]any{"params": map[string]any{"report_id": 59137}})}
			if err := tx.Create(&step).Error; err != nil {
				return err
			}
			await := models.TaskAwait{ID: models.NewID(), TaskID: task.ID, SourceType: models.AwaitSourceAppTool, CorrelationKey: step.ID, Status: models.AwaitPending}
			if err := tx.Create(&await).Error; err != nil {
				return err
			}
		} else if err := tx.Where("task_id = ? AND kind = ?", task.ID, models.StepAppTool).Order("created_at").Take(&step).Error; err != nil {
			return fmt.Errorf("demo: find step: %w", err)
		}
		info.StepID = step.ID
		return nil
	})
	if err != nil {
		return Info{}, fmt.Errorf("demo: seed: %w", err)
	}
	return info, nil
}

// Spec is the demo binding: read the invoices, hold one, and approve the
// review (which records a decision and releases the parked task).
func Spec() binding.Spec {
	return binding.Spec{
		Reads: []binding.Read{{
			Op: "list_invoices", Table: "invoices",
			Columns:    []string{"id", "vendor", "amount", "status"},
			Filterable: []string{"status", "vendor"},
			OrderBy:    []binding.Order{{Column: "id"}},
			Limit:      50,
		}},
		Writes: []binding.Write{
			{Op: "set_status", Table: "invoices", Mode: binding.ModeUpdate, KeyColumns: []string{"id"}, Columns: []string{"status"}},
			{Op: "record_decision", Table: "decisions", Mode: binding.ModeInsert, Columns: []string{"decision", "note"},
				FixedValues: map[string]any{"task_id": "{{task_id}}"}},
		},
		Actions: []binding.Action{{
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

// firstOrCreate loads the row matching where into dst, or creates dst.
func firstOrCreate(tx *gorm.DB, dst any, where string, args ...any) error {
	_, err := createIfMissing(tx, dst, where, args...)
	return err
}

// createIfMissing loads the row matching where into dst, or creates dst and
// reports that it did. The lookup goes into a fresh value because gorm adds
// dst's own (new) primary key to the condition.
func createIfMissing(tx *gorm.DB, dst any, where string, args ...any) (bool, error) {
	found := reflect.New(reflect.TypeOf(dst).Elem())
	err := tx.Where(where, args...).Take(found.Interface()).Error
	if err == nil {
		reflect.ValueOf(dst).Elem().Set(found.Elem())
		return false, nil
	}
	if !errors.Is(err, gorm.ErrRecordNotFound) {
		return false, fmt.Errorf("demo: find %T: %w", dst, err)
	}
	if err := tx.Create(dst).Error; err != nil {
		return false, fmt.Errorf("demo: create %T: %w", dst, err)
	}
	return true, nil
}
