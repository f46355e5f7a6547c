// Package review holds what parks and resumes tasks: awaits and their
// release (by a session's action, an admin's release or abort, or the
// await's expiry), the parked tasks an admin sees, resume events and their
// webhook deliveries. Who reviews a parked task (the reviewer queue and its
// claims) is internal/claim; a release drops the task's claim through
// claim.Release in the settling transaction. The key-detail summary pass
// lives in internal/task, and the feed an agent pages in internal/feed.
package review
