// Package web holds what the api and console Fiber apps share: the app
// factory with request ids and access logs, the error renderer for the v1
// and v2 envelopes, health endpoints and graceful serving.
package web
