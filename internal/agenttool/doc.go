// Package agenttool is seed 003 in appruntime's terms (docs/architecture.md#10-seeds-003-and-004): an agent's tool declarations, the targets they invoke, the
// references those targets hold, and the results their handlers return.
//
//   - ParseDeclaration checks a declaration as an admin saves it: a
//     provider-safe name, displayName, description, an input JSON Schema
//     compiled strictly (CheckInput validates a call's input against it),
//     and a target: app (a component integration and a path), url (a literal
//     origin) or builtin (a handler of ours). Methods are GET, POST, PUT,
//     PATCH and DELETE; an app target may not set Authorization.
//   - BuildRequest resolves ${input}, ${input.path} and ${env.NAME} in the
//     url, path, query, headers and body in one pass (reference.go has the
//     grammar); a missing or unknown reference fails, $${ is a literal ${.
//   - Dispatcher sends a target through the gateway's guarded client (no
//     private addresses unless allowed, no redirects, 1 MiB reply cap, no
//     endpoint words in errors), adding an app target's identity token: an
//     EdDSA JWT an IdentitySigner mints for five minutes and publishes as a
//     JWKS.
//   - ParseReply reads a handler's reply: plain text, the content /
//     markdown / embedUrl channels, or a pending_input card whose buttons
//     PendingInput.Click resolves. internal/markdown renders the markdown
//     channel for the host with raw HTML escaped and only absolute links live.
//
// The package holds no state of its own: storing declarations and tool
// calls, parking the task on a card and resuming it belong to its callers.
package agenttool
