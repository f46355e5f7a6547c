package web_test

import (
	"context"
	"io"
	"log/slog"
	"net"
	"testing"

	"github.com/gofiber/fiber/v2"
	"github.com/valyala/fasthttp"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/appruntime/appruntime/internal/logging"
	"github.com/appruntime/appruntime/internal/requestid"
	"github.com/appruntime/appruntime/internal/tracing"
	"github.com/appruntime/appruntime/internal/web"
)

// benchRequests serves b.N runtime reads through a NewApp's middleware to a
// handler that answers at once: the cost every API request pays before and
// after its handler (request id, access log, body gate and, with tracing
// on, its span).
func benchRequests(b *testing.B, header ...string) {
	app := web.NewApp(web.Options{Name: "api", Logger: logging.New(io.Discard, slog.LevelError)})
	app.Post("/api/app-runtime/read", func(c *fiber.Ctx) error { return c.SendString(`{"rows":[]}`) })
	handle := app.Handler()
	var req fasthttp.Request
	var ctx fasthttp.RequestCtx
	ctx.Init(&req, &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 40000}, nil)
	b.ReportAllocs()
	for b.Loop() {
		ctx.Request.Reset()
		ctx.Response.Reset()
		ctx.Request.Header.SetMethod(fiber.MethodPost)
		ctx.Request.SetRequestURI("/api/app-runtime/read")
		ctx.Request.Header.SetContentType(fiber.MIMEApplicationJSON)
		for i := 0; i+1 < len(header); i += 2 {
			ctx.Request.Header.Set(header[i], header[i+1])
		}
		ctx.Request.SetBodyString(`{"op":"invoices","payload":{"limit":10}}`)
		handle(&ctx)
		if ctx.Response.StatusCode() != fiber.StatusOK {
			b.Fatalf("status %d: %s", ctx.Response.StatusCode(), ctx.Response.Body())
		}
	}
}

// BenchmarkRequest is a request with tracing off, the default.
func BenchmarkRequest(b *testing.B) {
	if tracing.Enabled() {
		b.Skip("tracing was turned on by BenchmarkRequestTraced: run each on its own")
	}
	benchRequests(b)
}

// BenchmarkRequestTraced is a request with tracing on, every trace sampled
// (traceidratio 1.0), spans batched to an exporter that drops them: the
// cost of tracing on the API's side, the collector's network left out. It
// turns tracing on for the rest of the test binary: run it on its own
// (-bench 'RequestTraced').
func BenchmarkRequestTraced(b *testing.B) {
	tp := tracing.NewProvider(requestid.From, sdktrace.WithSampler(tracing.Sampler("traceidratio", 1)),
		sdktrace.WithBatcher(tracetest.NewNoopExporter()))
	b.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
	tracing.Install(tp)
	b.Run("new trace", func(b *testing.B) { benchRequests(b) })
	b.Run("caller's traceparent", func(b *testing.B) {
		benchRequests(b, "traceparent", "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01")
	})
}
