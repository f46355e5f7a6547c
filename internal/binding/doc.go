// Package binding is the one place that knows what a binding is: the shape of
// its allowed_operations (spec.go), the capability catalog, the rules a
// binding must pass when it is saved (Validate), its version history, and the
// cached, indexed form the runtime consults on every call (Service.Lookup).
// The API, the console and the worker all go through it, so a binding is
// refused for the same reason, with the same message, wherever it is saved.
package binding
