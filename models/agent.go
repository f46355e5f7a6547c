package models

import "time"

// Agent is an agent configuration within a workspace: its key details, its
// summary template and where its parked tasks' resume events are delivered.
type Agent struct {
	ID                         string `gorm:"primaryKey"`
	WorkspaceID                string
	Name                       string
	KeyDefinitions             JSON // [{"key","description","type"}]
	SummaryInstructions        string
	PriorityField              string
	DocumentTranslationEnabled bool
	ResumeWebhookURL           string
	// WebhookEvents are the event types its webhook receives, a JSON array
	// of names; null is every type
	// (docs/agent-platforms.md#webhook-event-catalogue).
	WebhookEvents    JSON
	WebhookSecretEnc []byte `json:"-"` // encrypted at rest (internal/crypt)
	CreatedAt        time.Time
	UpdatedAt        time.Time
}

// WebhookEventList returns the agent's subscription: nil for every type.
// A stored value that is not an array of names is read as every type.
func (a Agent) WebhookEventList() []string {
	if len(a.WebhookEvents) == 0 || string(a.WebhookEvents) == "null" {
		return nil
	}
	var names []string
	if err := a.WebhookEvents.Decode(&names); err != nil || names == nil {
		return nil
	}
	return names
}

// Integration is a connection to a customer system: a data source (postgres),
// a REST upstream, a SQL server. Its secrets are encrypted at rest and never
// returned to a bundle.
type Integration struct {
	ID          string `gorm:"primaryKey"`
	WorkspaceID string
	Name        string
	Kind        string
	BaseURL     string
	Config      JSON   // non-secret settings
	SecretsEnc  []byte `json:"-"` // encrypted JSON: dsn, oauth_config, bearer token…
	CreatedAt   time.Time
	UpdatedAt   time.Time
}
