// Package claim holds what claims a parked task for a reviewer: the review
// queue (POST /api/review/next and its abort: who gets which parked task,
// in which order, for how long), the check that only a live claim's holder
// mints a session or acts on a claimed task, and the clearing of expired
// claims. What parks a task and releases it (awaits, resume events, their
// webhook deliveries) is internal/review, which drops a settled task's
// claim through Release. It stands on the store alone: claiming never
// parks, releases or resumes anything
// (docs/architecture.md#packages-by-floor).
package claim
