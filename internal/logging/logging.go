// Package logging sets up appruntime's structured JSON logs. Values put in a
// context with With (the request id above all) are added to every line logged
// with that context, so all the lines of one request can be found together.
package logging

import (
	"context"
	"io"
	"log/slog"
)

type ctxKey struct{}

// New returns a JSON logger at level that adds context attributes to each record.
func New(w io.Writer, level slog.Level) *slog.Logger {
	return slog.New(&contextHandler{Handler: slog.NewJSONHandler(w, &slog.HandlerOptions{Level: level})})
}

// With returns ctx carrying attrs in addition to those it already carries.
func With(ctx context.Context, attrs ...slog.Attr) context.Context {
	prev, _ := ctx.Value(ctxKey{}).([]slog.Attr)
	merged := make([]slog.Attr, 0, len(prev)+len(attrs))
	merged = append(merged, prev...)
	merged = append(merged, attrs...)
	return context.WithValue(ctx, ctxKey{}, merged)
}

// RequestID is the attribute key of the request id.
const RequestID = "request_id"

// RequestIDOf returns the request id carried by ctx, or "".
func RequestIDOf(ctx context.Context) string {
	attrs, _ := ctx.Value(ctxKey{}).([]slog.Attr)
	for _, a := range attrs {
		if a.Key == RequestID {
			return a.Value.String()
		}
	}
	return ""
}

type contextHandler struct{ slog.Handler }

func (h *contextHandler) Handle(ctx context.Context, r slog.Record) error {
	if attrs, ok := ctx.Value(ctxKey{}).([]slog.Attr); ok {
		r.AddAttrs(attrs...)
	}
	return h.Handler.Handle(ctx, r)
}

func (h *contextHandler) WithAttrs(attrs []slog.Attr) slog.Handler {
	return &contextHandler{Handler: h.Handler.WithAttrs(attrs)}
}

func (h *contextHandler) WithGroup(name string) slog.Handler {
	return &contextHandler{Handler: h.Handler.WithGroup(name)}
}
