// Package api is appruntime's JSON API on Fiber: the runtime verbs bundles
// call, the host endpoints, the agent-platform endpoints and the admin API.
// One file per resource; handlers parse, call one domain function and render.
package api
