package testkit

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"net/netip"
	"testing"

	"gorm.io/gorm"

	"github.com/appruntime/appruntime/internal/auth"
	"github.com/appruntime/appruntime/internal/config"
	"github.com/appruntime/appruntime/jobs"
	"github.com/appruntime/appruntime/models"
)

// TestKey is a 32-byte key for tests' SECRETS_KEY, SESSION_KEYS and CONSOLE_SESSION_KEY.
var TestKey = []byte("appruntime-test-key-0123456789ab")

// TestKeyBase64 is TestKey as the environment carries it.
var TestKeyBase64 = base64.StdEncoding.EncodeToString(TestKey)

// Loopback is the networks tests let data sources reach (their Postgres).
var Loopback = []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8"), netip.MustParsePrefix("::1/128")}

// Config returns a configuration for tests: every key set, loopback allowed
// outbound and to data sources, listen addresses on free loopback ports
// chosen by the caller.
func Config(databaseURL, redisURL string) *config.Config {
	return &config.Config{
		DatabaseURL:       databaseURL,
		RedisURL:          redisURL,
		APIAddr:           "127.0.0.1:0",
		ConsoleAddr:       "127.0.0.1:0",
		PublicAPIURL:      "http://127.0.0.1",
		ConsoleURL:        "http://127.0.0.1",
		BundleBaseURL:     "http://127.0.0.1/bundles",
		SessionKeys:       []config.Key{{ID: "test", Secret: TestKey}},
		SessionIssuer:     "appruntime",
		SecretsKey:        TestKey,
		ConsoleKey:        TestKey,
		WorkerConcurrency: 4,
		LookupConcurrency: 64,
		LookupWait:        250_000_000,
		RunConcurrency:    256,
		RunWait:           250_000_000,
		ShutdownTimeout:   5_000_000_000,
		OutboundAllow:     []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")},
		DataSourceAllow:   Loopback,
		Tools:             config.Tools{DocumentRenderConcurrency: 4, DocumentRenderShare: 2, DocumentRenderWait: config.DefaultDocumentRenderWait},
	}
}

// Tenant is a workspace with an admin (who holds the host token), an agent
// and a token of each scope.
type Tenant struct {
	Workspace  models.Workspace
	Admin      models.User
	Agent      models.Agent
	HostToken  string
	AgentToken string
	AdminToken string
}

// NewTenant creates a tenant in db.
func NewTenant(t testing.TB, db *gorm.DB) Tenant {
	t.Helper()
	ctx := context.Background()
	ws := models.Workspace{ID: models.NewID(), Name: "ws-" + randomHex(3)}
	must(t, db.Create(&ws).Error)
	hash, err := auth.HashPassword("correct horse battery")
	must(t, err)
	admin := models.User{ID: models.NewID(), WorkspaceID: ws.ID, Email: "admin-" + randomHex(4) + "@example.test",
		Name: "Admin", Role: models.RoleAdmin, PasswordHash: hash}
	must(t, db.Create(&admin).Error)
	agent := models.Agent{ID: models.NewID(), WorkspaceID: ws.ID, Name: "agent-" + randomHex(3)}
	must(t, db.Create(&agent).Error)
	tn := Tenant{Workspace: ws, Admin: admin, Agent: agent}
	_, tn.HostToken, err = auth.IssueToken(ctx, db, ws.ID, models.ScopeHost, "host", &admin.ID, nil)
	must(t, err)
	_, tn.AgentToken, err = auth.IssueToken(ctx, db, ws.ID, models.ScopeAgent, "agent", nil, &agent.ID)
	must(t, err)
	_, tn.AdminToken, err = auth.IssueToken(ctx, db, ws.ID, models.ScopeAdmin, "admin", nil, nil)
	must(t, err)
	return tn
}

func must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatalf("testkit: %v", err)
	}
}

// BindingTargets is a tenant with what a binding may name: a postgres data
// source, a REST upstream, configured tools of every base tool (one display
// name on two agents), and another workspace's data source and tool.
type BindingTargets struct {
	Tenant  Tenant
	PG      models.Integration // postgres data source of the tenant
	REST    models.Integration // REST upstream of the tenant
	Foreign models.Integration // another workspace's postgres data source
}

// NewBindingTargets creates a BindingTargets in db.
func NewBindingTargets(t testing.TB, db *gorm.DB) BindingTargets {
	t.Helper()
	tn := NewTenant(t, db)
	other := NewTenant(t, db)
	f := BindingTargets{
		Tenant:  tn,
		PG:      models.Integration{ID: models.NewID(), WorkspaceID: tn.Workspace.ID, Name: "orders db", Kind: "postgres"},
		REST:    models.Integration{ID: models.NewID(), WorkspaceID: tn.Workspace.ID, Name: "crm", Kind: "rest", BaseURL: "https://crm.example.com"},
		Foreign: models.Integration{ID: models.NewID(), WorkspaceID: other.Workspace.ID, Name: "their db", Kind: "postgres"},
	}
	for _, in := range []*models.Integration{&f.PG, &f.REST, &f.Foreign} {
		must(t, db.Create(in).Error)
	}
	second := models.Agent{ID: models.NewID(), WorkspaceID: tn.Workspace.ID, Name: "second agent"}
	must(t, db.Create(&second).Error)
	for _, ct := range []models.ConfiguredTool{
		{DisplayName: "CSV lookup", BaseTool: models.BaseCSVLookup, AgentID: tn.Agent.ID},
		{DisplayName: "Query orders", BaseTool: models.BasePostgresQuery, AgentID: tn.Agent.ID},
		{DisplayName: "Query ledger", BaseTool: models.BaseMSSQLQuery, AgentID: tn.Agent.ID},
		{DisplayName: "Parse again", BaseTool: models.BaseExtraction, AgentID: tn.Agent.ID},
		{DisplayName: "Invoice review", BaseTool: models.BaseAppTool, AgentID: tn.Agent.ID},
		{DisplayName: "Revalidate PO", BaseTool: models.BasePythonCode, AgentID: tn.Agent.ID},
		// The same display name on two agents: both must pass.
		{DisplayName: "Find vendor", BaseTool: models.BasePythonCode, AgentID: tn.Agent.ID},
		{DisplayName: "Find vendor", BaseTool: models.BaseCSVLookup, AgentID: second.ID},
		{DisplayName: "Foreign tool", BaseTool: models.BasePythonCode, AgentID: other.Agent.ID, WorkspaceID: other.Workspace.ID},
	} {
		ct.ID = models.NewID()
		if ct.WorkspaceID == "" {
			ct.WorkspaceID = tn.Workspace.ID
		}
		must(t, db.Create(&ct).Error)
	}
	return f
}

// ResumeEvents counts the resume events written to the outbox for task
// taskID.
func ResumeEvents(t testing.TB, db *gorm.DB, taskID string) int {
	t.Helper()
	var rows []models.Outbox
	if err := db.Where("kind = ?", jobs.ResumeEvent{}.Kind()).Find(&rows).Error; err != nil {
		t.Fatalf("testkit: resume events: %v", err)
	}
	n := 0
	for _, r := range rows {
		var p struct {
			TaskID string `json:"task_id"`
		}
		if err := json.Unmarshal(r.Payload, &p); err != nil {
			t.Fatalf("testkit: resume event %s: %v", r.ID, err)
		}
		if p.TaskID == taskID {
			n++
		}
	}
	return n
}
