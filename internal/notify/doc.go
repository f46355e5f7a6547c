// Package notify tells and escalates a review pool's waiting work
// (docs/admins.md#notifications-of-waiting-work). The worker's notify pass
// (Notifier.Pass, every NOTIFY_INTERVAL in every replica) moves a task that
// waited in a pool past its escalation threshold to the pool's target pool
// (audited as review_pool.escalate), records a digest of the tasks newly
// waiting past the wait threshold for each of the pool's channels (its
// webhook, signed the Standard Webhooks way with internal/webhook, and its
// email addresses, through the SMTP relay of SMTP_URL), and delivers the
// digests that are due, retrying a failed one with the resume webhooks'
// backoff. Postgres holds every digest and its next attempt's time
// (review_pool_digests); a task's wait is in at most one digest per pool
// (review_pool_notices).
package notify
