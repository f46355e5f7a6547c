// Package limit keeps bundles and lookups within the bounds of seed 000:
//
//   - Limiter: a per-surface rate (GCRA, 5/s sustained, burst 20) whose state
//     lives in Redis, so every API replica spends one budget per surface.
//   - Semaphore: at most N concurrent holders per surface, in Redis, with
//     entries that expire so a dead holder cannot keep its slot.
//   - Bulkhead: a process-wide bound on concurrent lookups that waits
//     briefly for a slot and then answers 503.
//
// A surface is one artifact step: the limits are per step, shared by all of
// that step's sessions.
package limit
