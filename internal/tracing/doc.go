// Package tracing owns the process's OpenTelemetry traces: Setup installs
// the tracer provider the OTEL_* variables describe (internal/config reads
// and checks them), and the helpers here start spans and carry the W3C
// traceparent across the process's boundaries: asynq task headers, outbox
// rows and outbound HTTP requests (docs/deploy.md#turn-traces-on).
//
// With tracing off (the default) every helper returns at once without
// allocating: the request and job hot paths pay one atomic load.
package tracing
