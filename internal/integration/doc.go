// Package integration serves integration rows to everything that connects
// with one (the runtime's data sources and REST calls, the gateway's
// http_calls, agent tool components, the worker's SQL tools) from one cache
// per process, which every change to an integration, on any replica,
// evicts before the change is answered: a rotated secret or DSN applies on
// the very next call everywhere, as a saved binding does (internal/binding).
// The admin service makes the changes (admin.Options.Integrations) and
// announces them through Lookup.
package integration
