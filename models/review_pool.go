package models

import "time"

// ReviewPool is a named group of reviewers of a workspace. An agent's review
// tasks go to the pools an admin assigns it; a reviewer takes from the pools
// they belong to (docs/admins.md#review-pools-and-the-claim-limit).
type ReviewPool struct {
	ID          string `gorm:"primaryKey"`
	WorkspaceID string
	Name        string
	CreatedAt   time.Time
	UpdatedAt   time.Time
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
}
