// Package gateway is appruntime's outbound HTTP: every request the platform
// makes to a URL an admin or agent supplied (webhooks, http_calls, token
// endpoints) leaves through a client whose dialer refuses private, loopback,
// link-local, metadata and other special-purpose addresses at connect time.
package gateway
