// Package binding is the binding service: it saves bindings (checked by the
// rules of internal/bindingspec, versioned with a diff, audited), keeps their
// history, and serves them to the runtime from a cache that every save, on
// any replica, evicts (Service.Lookup, an acknowledged broadcast). What a
// binding document may say lives in internal/bindingspec; this package adds
// the database, Redis and audit around it, and answers the rules' questions
// about a workspace from the database (WorkspaceOf). The API, the console and
// the worker all save through it, so a binding is refused for the same
// reason, with the same message, wherever it is saved.
package binding
