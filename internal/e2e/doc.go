// Package e2e holds the end-to-end tests of the whole story, run the way a
// deployment runs it: one platform on real PostgreSQL and Redis, the API on
// a loopback listener, the worker (outbox relay, resume and webhook jobs) in
// the same process, and a local HTTP server as the agent platform's webhook
// receiver. The tests act only through the HTTP API, with the four kinds of
// credentials its callers hold (admin, agent and host tokens, and the
// bundle's session token), and then check what the agent platform would
// see: the task running again, one signed webhook, the pull endpoint's event.
//
// The package has no code of its own; it exists for its tests.
package e2e
