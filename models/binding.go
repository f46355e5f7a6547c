package models

import "time"

// Binding is an admin's allowlist for app tools: which reads, writes, actions,
// http_calls, tools and capabilities a bundle may use, against which data source.
// Its shape and rules live in internal/binding.
type Binding struct {
	ID                string `gorm:"primaryKey"`
	WorkspaceID       string
	Name              string
	BindingKind       string
	IntegrationID     *string
	AllowedOperations JSON
	Version           int
	CreatedAt         time.Time
	UpdatedAt         time.Time
}

// BindingVersion records one save of a binding: its full content then, who
// saved it and the diff against the previous version.
type BindingVersion struct {
	ID                string `gorm:"primaryKey"`
	BindingID         string
	Version           int
	Name              string
	BindingKind       string
	IntegrationID     *string
	AllowedOperations JSON
	Diff              JSON
	SavedBy           string
	RestoredFrom      *int // the version whose content this save restored; nil for an edit
	CreatedAt         time.Time
}

// Bundle is one version of an uploaded HTML/JS bundle. The id is shared by all
// versions of a bundle; the bytes live in storage under StorageKey.
type Bundle struct {
	ID          string `gorm:"primaryKey"`
	Version     int    `gorm:"primaryKey;autoIncrement:false"`
	WorkspaceID string
	Name        string
	SHA256      string `gorm:"column:sha256"`
	ContentType string
	Size        int64
	StorageKey  string
	CreatedAt   time.Time
}

// BundleGrant is the network grants a bundle version declared (the origins
// it may connect to, load resources from and frame: JSON arrays of https
// origins) and an admin's decision on them. Only an approved grant widens
// the version's served content security policy
// (docs/admins.md#approving-network-grants).
type BundleGrant struct {
	BundleID        string `gorm:"primaryKey"`
	Version         int    `gorm:"primaryKey;autoIncrement:false"`
	ConnectDomains  JSON
	ResourceDomains JSON
	FrameDomains    JSON
	State           string // GrantPending, GrantApproved, GrantRefused or GrantWithdrawn
	DecidedBy       *string
	DecidedAt       *time.Time
	CreatedAt       time.Time
}

// The states of a BundleGrant. A declaration starts pending; an admin
// approves or refuses it, and may withdraw an approval.
const (
	GrantPending   = "pending"
	GrantApproved  = "approved"
	GrantRefused   = "refused"
	GrantWithdrawn = "withdrawn"
)

// Blob is stored bytes (bundles, files) for the database storage backend.
type Blob struct {
	Key       string `gorm:"primaryKey"`
	Content   []byte
	CreatedAt time.Time
}

// Base tools a configured tool can be built on.
const (
	BaseAppTool       = "app_tool"
	BasePythonCode    = "python_code_tool"
	BaseCSVLookup     = "csv_lookup_tool"
	BasePostgresQuery = "postgres_execute_query"
	BaseMSSQLQuery    = "mssql_execute_query"
	BaseExtraction    = "structured_data_extraction"
	BaseTranslateText = "translate_text"
)

// ConfiguredTool is an agent's instance of a base tool with its bound settings.
// App-tool settings have their own columns; the rest of a base tool's
// settings (code, file, query…) are in Config.
type ConfiguredTool struct {
	ID                 string `gorm:"primaryKey"`
	WorkspaceID        string
	AgentID            string
	DisplayName        string
	BaseTool           string
	Config             JSON
	BundleID           *string
	BundleVersion      *int // nil: the newest version
	BindingID          *string
	ProducerToolID     *string
	IntegrationID      *string
	ActionSchema       JSON
	Theme              JSON
	DefaultFullscreen  bool
	AwaitReview        bool
	InputSchema        JSON
	AwaitExpirySeconds *int
	CreatedAt          time.Time
	UpdatedAt          time.Time
}
