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
	prev := attrsOf(ctx)
	c := &attrsContext{Context: ctx}
	list := c.own[:0]
	if n := len(prev) + len(attrs); n > len(c.own) {
		list = make([]slog.Attr, 0, n)
	}
	list = append(list, prev...)
	c.attrs = append(list, attrs...)
	return c
}

// attrsContext is a context carrying the attributes of With. It is its own
// value rather than a context.WithValue of a slice: With runs on every
// request, and a request's one attribute (its id) then costs one
// allocation, not three (the slice, its box and the value context).
type attrsContext struct {
	context.Context
	attrs []slog.Attr
	own   [1]slog.Attr // attrs, when they fit
}

// Value returns c itself for ctxKey, and asks the parent for any other key.
func (c *attrsContext) Value(key any) any {
	if _, ours := key.(ctxKey); ours {
		return c
	}
	return c.Context.Value(key)
}

// attrsOf returns the attributes With put in ctx, or nil.
func attrsOf(ctx context.Context) []slog.Attr {
	if c, ok := ctx.Value(ctxKey{}).(*attrsContext); ok {
		return c.attrs
	}
	return nil
}

// RequestID is the attribute key of the request id.
const RequestID = "request_id"

// RequestIDOf returns the request id carried by ctx, or "".
func RequestIDOf(ctx context.Context) string {
	for _, a := range attrsOf(ctx) {
		if a.Key == RequestID {
			return a.Value.String()
		}
	}
	return ""
}

type contextHandler struct{ slog.Handler }

func (h *contextHandler) Handle(ctx context.Context, r slog.Record) error {
	if attrs := attrsOf(ctx); len(attrs) > 0 {
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
