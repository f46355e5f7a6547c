// Package gateway is appruntime's outbound HTTP: every request the platform
// makes to a URL an admin or agent supplied (webhooks, http_calls, token
// endpoints) leaves through a client whose dialer refuses private, loopback,
// link-local, metadata and other special-purpose addresses at connect time
// (dialer.go).
//
// Gateway runs a binding's http_calls (seed 000, "Lookups", "http_calls
// templates", "Actions return the upstream reply"): it fills the call's
// templates through internal/placeholder, authenticates with the call's
// integration (none, bearer, oauth2_password, client_credentials; tokens
// cached per integration, token URL, scope and credential, refreshed once
// on a 401), sends the request without following redirects, and returns
// the upstream's status and body whatever that status is, discarding a
// reply over MaxReplyBytes. Only a failure before the upstream answered is
// an error, and its message never quotes the upstream or the token endpoint:
// their words are logged with the request id.
package gateway
