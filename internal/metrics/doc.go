// Package metrics owns appruntime's Prometheus registry and every collector
// on it (docs/operators.md#metrics lists each metric): runtime verbs, rate-limited
// calls, data-source statements, outbound calls, jobs, queues, the outbox,
// webhook deliveries and live sessions, plus the Go runtime's and the
// process's own. Serve exposes it on a listen address of its own
// (METRICS_ADDR), never on a public one.
//
// A nil *Metrics is valid and records nothing, so code instrumented with it
// needs no branch where metrics are off. The methods on the request path
// (ObserveVerb, ObserveDataSource, ObserveRateLimited) resolve their label
// values to cached children by index: after the first call for a
// combination they take no lock and allocate nothing (BenchmarkObserveVerb).
//
// Label values are closed sets named by appruntime's own code (verbs, op
// kinds, job kinds, route patterns), never values a bundle or a caller
// chooses, so the number of series stays bounded: a value outside the set is
// recorded as "other".
package metrics
