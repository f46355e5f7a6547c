// Package bindingspec is the rules of a binding document, and nothing else:
// the shape of its allowed_operations (spec.go), the strict decoding of what
// an admin submits, the checks a binding must pass when it is saved
// (Validate), the diff between two versions, the capability catalog, the
// placeholders a template may hold and the params a bundle may supply to a
// tool. It imports only leaves and other rule packages (internal/archtest
// checks): what it must know of a workspace (its integrations and configured
// tools) it asks through Workspace, which internal/binding answers from the
// database. The API, the console and the worker all save through
// internal/binding, which calls Validate, so a binding is refused for the
// same reason, with the same message, wherever it is saved.
package bindingspec
