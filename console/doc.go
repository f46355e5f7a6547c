// Package console is appruntime's server-rendered admin console: one file per
// page or action, templates and static files embedded, cookie sessions with
// CSRF protection, admin role only, every change audited.
package console
