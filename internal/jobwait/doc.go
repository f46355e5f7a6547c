// Package jobwait runs a job on the worker fleet and waits for its result,
// the way /run does (docs/architecture.md#queues): the caller enqueues with its
// own task id, an absolute deadline and no retries, then waits for a
// completion notification over Redis pub/sub, polling the stored result as a
// fallback for a missed message. The worker side (Handler) runs the job with
// a context cancelled at that same deadline and publishes the outcome once.
//
// Past the deadline the caller gets a 504 (apperr.Timeout); a queue that
// cannot be reached at enqueue is a 502 (apperr.BadGateway); a job that
// ended with no outcome (lost in a Redis failover, archived after its
// worker died) is a 503 (ErrLost) within about two seconds of it.
package jobwait
