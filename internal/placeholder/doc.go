// Package placeholder is the one grammar of {{key}} placeholders in binding
// templates and the one place that fills them. Names lists a template's
// placeholders (the binding's save-time checks use it); FillSession fills a
// plain string from session values only (fixed filters and values); URL,
// Text, Header and JSON fill an http_call's url, query values, headers and
// body_template with the escaping their position needs (seed 000, "http_calls
// templates"; docs/architecture.md#1-host-placeholders):
//
//   - in the host, a placeholder fills one whole DNS label, and its value must
//     be one (HostLabel), checked as sent, before any normalisation: 403;
//   - before the '?', a value is one path segment: every byte but the
//     unreserved ones is percent-encoded, an empty value is 400, and a value
//     that is, or decodes to, a dot segment or a control character is 403;
//   - after the '?', a value is query-escaped, so it cannot add parameters;
//   - in a header, a control character (CR, LF, …) is 400;
//   - in a body, a value is JSON-encoded, so it cannot add a field, and a
//     string that is exactly one placeholder takes the value's JSON type.
//
// task_id, agent_id, step_id and workspace_id are taken from Source.Session
// only, never from the payload. A placeholder whose key is absent is 400.
// EscapeSegment, StaysOneSegment and HasControl are exported for the other
// template grammar, agent tools' ${…} references (internal/agenttool), so
// that a value is escaped the same way in both.
//
// Errors carry internal/apperr codes; this package imports nothing else of
// appruntime, so every layer can share it.
package placeholder
