// Package runtime is the logic of the runtime verbs bundles call — /read,
// /write, /action, /run and /capability — used by the API (and by the console
// when it previews an artifact). Every call is scoped by verified session
// claims and gated by the binding's allowed_operations: a bundle names an op,
// the binding decides the table, the URL, the tool.
package runtime
