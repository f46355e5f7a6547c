// Package limit keeps bundles, lookups and callers within their bounds:
//
//   - Limiter: a per-surface rate (GCRA, 5/s sustained, burst 20, seed 000)
//     whose state lives in Redis, so every API replica spends one budget per
//     surface; each replica spends it from short leases it reserves there
//     (docs/performance.md#the-limiters-lease).
//   - Semaphore: at most N concurrent holders per surface, in Redis, with
//     entries that expire so a dead holder cannot keep its slot.
//   - Share: at most N jobs of a queue class per workspace, fleet-wide, in
//     Redis, each slot freed by its job's end or at its deadline.
//   - Bulkhead: a process-wide bound on concurrent lookups that waits
//     briefly for a slot and then answers 503.
//   - WorkGate: a process-wide bound on expensive runs (page renderings
//     and OCR) joined to a fleet-wide share per workspace, waited for
//     briefly, then a 503.
//   - ByteBudget: a process-wide bound on bytes held at once (request
//     bodies being read) that refuses at once.
//   - SignInThrottle: console sign-in tries per account and per client
//     address (GCRA in Redis, shared by every console replica).
//
// A surface is one artifact step: the surface limits are per step, shared by
// all of that step's sessions.
package limit
