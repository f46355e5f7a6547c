package tracing

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sync/atomic"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracegrpc"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	oteltrace "go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"
)

// Span attribute keys of our own; the HTTP ones follow OpenTelemetry's
// semantic conventions.
const (
	AttrRequestID   = "appruntime.request_id"
	AttrWorkspaceID = "appruntime.workspace_id"
	AttrJobKind     = "appruntime.job.kind"
	AttrJobID       = "appruntime.job.id"
)

// TaskHeader is the asynq task header (and HTTP header) the W3C trace
// context travels in.
const TaskHeader = "traceparent"

// instrumentation names the tracer of every span we start.
const instrumentation = "github.com/appruntime/appruntime"

var (
	enabled atomic.Bool
	tracer  atomic.Pointer[oteltrace.Tracer]
	// noSpan is what Start returns with tracing off: an interface value
	// made once, so returning it allocates nothing.
	noSpan oteltrace.Span = noop.Span{}
	// propagator reads and writes the W3C traceparent and tracestate.
	propagator = propagation.TraceContext{}
)

// Options are what Setup needs; cmd/appruntime fills them from
// config.Tracing.
type Options struct {
	// Protocol is "http/protobuf" or "grpc"; the endpoint, headers and
	// timeout come from the OTEL_EXPORTER_OTLP_* variables, read by the
	// exporter.
	Protocol string
	// Sampler is an OTEL_TRACES_SAMPLER value, SamplerArg its ratio.
	Sampler    string
	SamplerArg float64
	// ServiceName is the service.name resource attribute.
	ServiceName string
	// RequestIDFunc returns the request id of a span's parent context; it
	// becomes the AttrRequestID of every span started there.
	RequestIDFunc func(context.Context) string
}

// Setup builds the OTLP exporter and tracer provider o describes and turns
// tracing on. The returned shutdown flushes the spans still buffered; call
// it once the process's work is done.
func Setup(ctx context.Context, o Options) (shutdown func(context.Context) error, err error) {
	var client otlptrace.Client
	switch o.Protocol {
	case "grpc":
		client = otlptracegrpc.NewClient()
	case "", "http/protobuf":
		client = otlptracehttp.NewClient()
	default:
		return nil, fmt.Errorf("tracing: protocol %q is neither http/protobuf nor grpc", o.Protocol)
	}
	exporter, err := otlptrace.New(ctx, client)
	if err != nil {
		return nil, fmt.Errorf("tracing: exporter: %w", err)
	}
	res, err := resource.New(ctx,
		resource.WithAttributes(attribute.String("service.name", o.ServiceName)),
		resource.WithFromEnv(), // OTEL_SERVICE_NAME and OTEL_RESOURCE_ATTRIBUTES win
		resource.WithTelemetrySDK())
	if err != nil && !errors.Is(err, resource.ErrPartialResource) {
		return nil, fmt.Errorf("tracing: resource: %w", err)
	}
	tp := NewProvider(o.RequestIDFunc,
		sdktrace.WithBatcher(exporter), sdktrace.WithResource(res),
		sdktrace.WithSampler(Sampler(o.Sampler, o.SamplerArg)))
	Install(tp)
	return tp.Shutdown, nil
}

// Sampler returns the sampler an OTEL_TRACES_SAMPLER value names, with arg
// the ratio of the traceidratio ones; an unknown name is
// parentbased_always_on (internal/config refuses unknown names first).
func Sampler(name string, arg float64) sdktrace.Sampler {
	switch name {
	case "always_on":
		return sdktrace.AlwaysSample()
	case "always_off":
		return sdktrace.NeverSample()
	case "traceidratio":
		return sdktrace.TraceIDRatioBased(arg)
	case "parentbased_always_off":
		return sdktrace.ParentBased(sdktrace.NeverSample())
	case "parentbased_traceidratio":
		return sdktrace.ParentBased(sdktrace.TraceIDRatioBased(arg))
	}
	return sdktrace.ParentBased(sdktrace.AlwaysSample())
}

// NewProvider is a tracer provider whose every span carries the request id
// requestIDFunc finds in its parent context (nil: none), built with opts.
// Tests pass sdktrace.WithSyncer of an in-memory exporter.
func NewProvider(requestIDFunc func(context.Context) string, opts ...sdktrace.TracerProviderOption) *sdktrace.TracerProvider {
	if requestIDFunc != nil {
		opts = append([]sdktrace.TracerProviderOption{sdktrace.WithSpanProcessor(requestIDProcessor{requestIDFunc})}, opts...)
	}
	return sdktrace.NewTracerProvider(opts...)
}

// Install makes tp the process's tracer provider, with the W3C trace
// context propagator, and turns tracing on.
func Install(tp oteltrace.TracerProvider) {
	otel.SetTracerProvider(tp)
	otel.SetTextMapPropagator(propagator)
	t := tp.Tracer(instrumentation)
	tracer.Store(&t)
	enabled.Store(true)
}

// Enabled reports whether tracing is on.
func Enabled() bool { return enabled.Load() }

// Start starts a span named name of kind under ctx's span. With tracing off
// it returns ctx and a span that does nothing, allocating nothing.
func Start(ctx context.Context, name string, kind oteltrace.SpanKind) (context.Context, oteltrace.Span) {
	if !enabled.Load() {
		return ctx, noSpan
	}
	return (*tracer.Load()).Start(ctx, name, oteltrace.WithSpanKind(kind))
}

// StartJob starts the consumer span of a job of kind with id, whose parent
// is the span traceparent (its task header) names: the job continues the
// trace of the request or job that enqueued it.
func StartJob(ctx context.Context, kind, id, traceparent string) (context.Context, oteltrace.Span) {
	if !enabled.Load() {
		return ctx, noSpan
	}
	ctx, span := Start(Remote(ctx, traceparent), "job "+kind, oteltrace.SpanKindConsumer)
	span.SetAttributes(attribute.String(AttrJobKind, kind), attribute.String(AttrJobID, id))
	return ctx, span
}

// End ends span, marking it failed when err is not nil.
func End(span oteltrace.Span, err error) {
	if err != nil {
		span.RecordError(err)
		span.SetStatus(codes.Error, err.Error())
	}
	span.End()
}

// SetWorkspace names the workspace ctx's work is for on ctx's span, once
// the caller is known.
func SetWorkspace(ctx context.Context, workspaceID string) {
	if !enabled.Load() || workspaceID == "" {
		return
	}
	oteltrace.SpanFromContext(ctx).SetAttributes(attribute.String(AttrWorkspaceID, workspaceID))
}

// Traceparent returns the W3C traceparent of ctx's span, or "" when tracing
// is off or ctx has no span.
func Traceparent(ctx context.Context) string {
	if !enabled.Load() {
		return ""
	}
	sc := oteltrace.SpanContextFromContext(ctx)
	if !sc.IsValid() {
		return ""
	}
	return fmt.Sprintf("00-%s-%s-%s", sc.TraceID(), sc.SpanID(), sc.TraceFlags())
}

// AddTaskHeaders adds ctx's trace context to task headers h (made when nil)
// and returns them; with tracing off, or no span in ctx, h as it is.
func AddTaskHeaders(ctx context.Context, h map[string]string) map[string]string {
	tp := Traceparent(ctx)
	if tp == "" {
		return h
	}
	if h == nil {
		h = map[string]string{}
	}
	h[TaskHeader] = tp
	return h
}

// Remote returns ctx whose parent span is the one traceparent names (from a
// task header or an outbox row), or ctx when tracing is off or traceparent
// is empty or malformed.
func Remote(ctx context.Context, traceparent string) context.Context {
	if !enabled.Load() || traceparent == "" {
		return ctx
	}
	return propagator.Extract(ctx, propagation.MapCarrier{TaskHeader: traceparent})
}

// Extract returns ctx whose parent span is the one carrier's traceparent
// names (an inbound request's headers), or ctx when tracing is off.
func Extract(ctx context.Context, carrier propagation.TextMapCarrier) context.Context {
	if !enabled.Load() {
		return ctx
	}
	return propagator.Extract(ctx, carrier)
}

// requestIDProcessor puts the request id of a span's parent context on the
// span as it starts, so that every span of a request's work carries it.
type requestIDProcessor struct {
	requestIDFunc func(context.Context) string
}

func (p requestIDProcessor) OnStart(parent context.Context, s sdktrace.ReadWriteSpan) {
	if id := p.requestIDFunc(parent); id != "" {
		s.SetAttributes(attribute.String(AttrRequestID, id))
	}
}

func (requestIDProcessor) OnEnd(sdktrace.ReadOnlySpan)      {}
func (requestIDProcessor) Shutdown(context.Context) error   { return nil }
func (requestIDProcessor) ForceFlush(context.Context) error { return nil }

// Transport returns a RoundTripper that wraps each outbound request in a
// client span and sends its traceparent, so the receiver can join the
// trace; with tracing off it passes the request on untouched. As the
// RoundTripper contract asks, the caller's request is never modified. next
// nil means http.DefaultTransport.
func Transport(next http.RoundTripper) http.RoundTripper {
	if next == nil {
		next = http.DefaultTransport
	}
	return transport{next: next}
}

type transport struct{ next http.RoundTripper }

func (t transport) RoundTrip(req *http.Request) (*http.Response, error) {
	if !enabled.Load() {
		return t.next.RoundTrip(req)
	}
	ctx, span := Start(req.Context(), req.Method, oteltrace.SpanKindClient)
	span.SetAttributes(attribute.String("http.request.method", req.Method),
		attribute.String("server.address", req.URL.Hostname()), attribute.String("url.path", req.URL.Path))
	out := req.WithContext(ctx)
	out.Header = req.Header.Clone()
	if out.Header == nil {
		out.Header = http.Header{}
	}
	propagator.Inject(ctx, propagation.HeaderCarrier(out.Header))
	res, err := t.next.RoundTrip(out)
	if err == nil {
		span.SetAttributes(attribute.Int("http.response.status_code", res.StatusCode))
		if res.StatusCode >= 500 {
			span.SetStatus(codes.Error, res.Status)
		}
	}
	End(span, err)
	return res, err
}

// CloseIdleConnections closes the idle connections of the wrapped transport,
// so http.Client.CloseIdleConnections still reaches it.
func (t transport) CloseIdleConnections() {
	if c, ok := t.next.(interface{ CloseIdleConnections() }); ok {
		c.CloseIdleConnections()
	}
}
