package models

import "time"

// Workspace is a tenant: every other row belongs to one, directly or through its parent.
type Workspace struct {
	ID   string `gorm:"primaryKey"`
	Name string
	// ReviewClaimLimit is how many live review claims one reviewer may hold
	// at once (1..100, default 1): review/next over it answers 409
	// (docs/admins.md#review-pools-and-the-claim-limit).
	ReviewClaimLimit int `gorm:"default:1"`
	CreatedAt        time.Time
	UpdatedAt        time.Time
}

// Review claim limits a workspace may set.
const (
	DefaultReviewClaimLimit = 1
	MaxReviewClaimLimit     = 100
)

// User roles.
const (
	RoleAdmin    = "admin"
	RoleReviewer = "reviewer"
)

// User is a person who signs in to the console (admin) or reviews in a host (reviewer).
type User struct {
	ID           string `gorm:"primaryKey"`
	WorkspaceID  string
	Email        string
	Name         string
	Role         string
	PasswordHash string `json:"-"`
	CreatedAt    time.Time
	UpdatedAt    time.Time
}

// Token scopes: which API a token may call.
const (
	ScopeHost  = "host"
	ScopeAgent = "agent"
	ScopeAdmin = "admin"
)

// APIToken is a bearer token; only its SHA-256 is stored. A host token belongs
// to a user, an agent token to an agent, an admin token to the workspace.
type APIToken struct {
	ID          string `gorm:"primaryKey"`
	WorkspaceID string
	Scope       string
	Name        string
	TokenHash   string `json:"-"`
	UserID      *string
	AgentID     *string
	CreatedAt   time.Time
	LastUsedAt  *time.Time
	RevokedAt   *time.Time
}

// TableName keeps the table name of the data model.
func (APIToken) TableName() string { return "api_tokens" }

// AuditEntry is one row of the audit log: who changed what.
type AuditEntry struct {
	ID          string `gorm:"primaryKey"`
	WorkspaceID *string
	Actor       string
	Action      string
	TargetType  string
	TargetID    string
	Detail      JSON
	CreatedAt   time.Time
}

// TableName keeps the table name of the data model.
func (AuditEntry) TableName() string { return "audit_log" }
