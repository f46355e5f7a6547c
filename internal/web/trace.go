package web

import (
	"context"
	"strings"

	"github.com/gofiber/fiber/v2"
	"github.com/gofiber/fiber/v2/utils"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	oteltrace "go.opentelemetry.io/otel/trace"

	"github.com/appruntime/appruntime/internal/tracing"
)

// startRequestSpan starts the server span of request c under the trace its
// traceparent header names, if any (docs/deploy.md#turn-traces-on). It
// runs only with tracing on.
func startRequestSpan(ctx context.Context, c *fiber.Ctx) (context.Context, oteltrace.Span) {
	ctx = tracing.Extract(ctx, requestCarrier{c})
	// The method's bytes are the connection's; the span outlives them.
	method := strings.Clone(c.Method())
	return tracing.Start(ctx, method, oteltrace.SpanKindServer)
}

// endRequestSpan names span after the route that answered (method and
// pattern, never the path's own ids), records the status and ends it.
func endRequestSpan(span oteltrace.Span, c *fiber.Ctx, status int, err error) {
	method, route := strings.Clone(c.Method()), c.Route().Path
	span.SetName(method + " " + route)
	span.SetAttributes(attribute.String("http.request.method", method), attribute.String("http.route", route),
		attribute.Int("http.response.status_code", status))
	if status >= 500 {
		msg := utils.StatusMessage(status)
		if err != nil {
			msg = err.Error()
		}
		span.SetStatus(codes.Error, msg)
	}
	span.End()
}

// requestCarrier reads an inbound request's headers for the propagator;
// it only reads. A value is copied: the trace state may keep it past the
// connection's next request.
type requestCarrier struct{ c *fiber.Ctx }

func (r requestCarrier) Get(key string) string { return strings.Clone(r.c.Get(key)) }
func (requestCarrier) Set(string, string)      {}
func (r requestCarrier) Keys() []string {
	var keys []string
	r.c.Request().Header.VisitAll(func(k, _ []byte) { keys = append(keys, string(k)) })
	return keys
}
