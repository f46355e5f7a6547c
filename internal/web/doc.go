// Package web holds what the api and console Fiber apps share: the app
// factory with request ids and access logs, the request-body rules (bodies
// streamed, capped per route, read only once a route allows it, within a
// per-app budget: body.go), the error renderer for the v1 and v2 envelopes,
// health endpoints and graceful serving.
package web
