package models

import "time"

// ReviewPool is a named group of reviewers of a workspace. An agent's review
// tasks go to the pools an admin assigns it; a reviewer takes from the pools
// they belong to (docs/admins.md#review-pools-and-the-claim-limit).
type ReviewPool struct {
	ID          string `gorm:"primaryKey"`
	WorkspaceID string
	Name        string
	ReviewPoolSettings
	CreatedAt time.Time
	UpdatedAt time.Time
}

// ReviewPoolMember puts a user in a review pool.
type ReviewPoolMember struct {
	PoolID string `gorm:"primaryKey"`
	UserID string `gorm:"primaryKey"`
}

// AgentReviewPool sends an agent's review tasks to a pool.
type AgentReviewPool struct {
	AgentID string `gorm:"primaryKey"`
	PoolID  string `gorm:"primaryKey"`
}

// TaskReviewPool is a pool a parked task took from its agent when it was
// parked; a task with none is any reviewer's of its workspace.
type TaskReviewPool struct {
	TaskID string `gorm:"primaryKey"`
	PoolID string `gorm:"primaryKey"`
	// RoutedAt is when the task reached the pool by an escalation; nil
	// when it came with its park (its await's time).
	RoutedAt *time.Time
	// TaskCreatedAt is a copy of the task's created_at, so the console's
	// task list reads a pool's tasks newest first from this table's own
	// index (docs/performance.md#the-console-task-list).
	TaskCreatedAt time.Time
}

// ReviewPoolSettings are a pool's notification and escalation settings
// (docs/admins.md#notifications-of-waiting-work), columns of review_pools.
type ReviewPoolSettings struct {
	// WaitThresholdSeconds: a task waiting longer in the pool is told in a
	// digest; nil tells nothing.
	WaitThresholdSeconds *int
	// EscalateAfterSeconds: a task waiting longer moves to
	// EscalateToPoolID; nil escalates nothing.
	EscalateAfterSeconds   *int
	EscalateToPoolID       *string
	NotifyWebhookURL       string
	NotifyWebhookSecretEnc []byte
	// NotifyEmails is a comma-separated list of addresses.
	NotifyEmails string
}

// Digest channels.
const (
	DigestWebhook = "webhook"
	DigestEmail   = "email"
)

// ReviewPoolNotice records that a task's await was told in a digest of a
// pool: it is not told again in that pool.
type ReviewPoolNotice struct {
	PoolID     string `gorm:"primaryKey"`
	AwaitID    string `gorm:"primaryKey"`
	NotifiedAt time.Time
}

// ReviewPoolDigest is one digest of a pool's waiting work to one channel
// (its webhook or its email addresses), with its delivery: attempts so far,
// the last one's outcome, and the next attempt's time (nil: delivered or
// given up).
type ReviewPoolDigest struct {
	ID            string `gorm:"primaryKey"`
	WorkspaceID   string
	PoolID        string
	Channel       string
	Target        string
	Body          string
	TaskCount     int
	Attempt       int
	StatusCode    int
	Error         string
	CreatedAt     time.Time
	NextAttemptAt *time.Time
	DeliveredAt   *time.Time
}
