package tracing_test

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	oteltrace "go.opentelemetry.io/otel/trace"

	"github.com/appruntime/appruntime/internal/tracing"
)

type ctxKey struct{}

func requestIDOf(ctx context.Context) string { s, _ := ctx.Value(ctxKey{}).(string); return s }

// With tracing off (nothing installed yet: this test runs first and alone)
// the hot-path helpers do nothing and allocate nothing.
func TestOffDoesNothingAndAllocatesNothing(t *testing.T) {
	require.False(t, tracing.Enabled())
	ctx := context.Background()
	var seen http.Header
	answer := &http.Response{StatusCode: 204, Body: http.NoBody}
	rt := tracing.Transport(roundTripFunc(func(r *http.Request) (*http.Response, error) {
		seen = r.Header
		return answer, nil
	}))
	req := httptest.NewRequest(http.MethodPost, "http://receiver.test/hook", nil)
	allocs := testing.AllocsPerRun(100, func() {
		c, span := tracing.Start(ctx, "x", oteltrace.SpanKindServer)
		span.End()
		tracing.SetWorkspace(c, "ws")
		if tracing.Traceparent(c) != "" || tracing.AddTaskHeaders(c, nil) != nil || tracing.Remote(c, "00-x") != c {
			panic("tracing off carried something")
		}
		if _, err := rt.RoundTrip(req); err != nil {
			panic(err)
		}
	})
	require.Zero(t, allocs)
	require.Empty(t, seen.Get("traceparent"))
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

func TestOnCarriesTheTraceAndTheRequestID(t *testing.T) {
	spans := tracetest.NewInMemoryExporter()
	tracing.Install(tracing.NewProvider(requestIDOf, sdktrace.WithSyncer(spans)))
	require.True(t, tracing.Enabled())

	// A task header's traceparent is the parent of the job's span.
	const parent = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
	ctx := context.WithValue(context.Background(), ctxKey{}, "req-1")
	ctx, job := tracing.StartJob(ctx, "resume_event", "job-1", parent)
	sc := job.SpanContext()
	require.Equal(t, "4bf92f3577b34da6a3ce929d0e0e4736", sc.TraceID().String())
	tp := tracing.Traceparent(ctx)
	require.Equal(t, "00-4bf92f3577b34da6a3ce929d0e0e4736-"+sc.SpanID().String()+"-01", tp)
	require.Equal(t, map[string]string{"request_id": "r", "traceparent": tp}, tracing.AddTaskHeaders(ctx, map[string]string{"request_id": "r"}))

	// An outbound request gets a client span and its traceparent; the
	// caller's request is left as it was.
	var got http.Header
	rt := tracing.Transport(roundTripFunc(func(r *http.Request) (*http.Response, error) {
		got = r.Header
		return &http.Response{StatusCode: 503, Status: "503 Service Unavailable", Body: http.NoBody}, nil
	}))
	req := httptest.NewRequest(http.MethodPost, "http://receiver.test/hook", nil).WithContext(ctx)
	_, err := rt.RoundTrip(req)
	require.NoError(t, err)
	require.Empty(t, req.Header.Get("traceparent"), "the caller's request is not modified")
	require.Regexp(t, `^00-4bf92f3577b34da6a3ce929d0e0e4736-[0-9a-f]{16}-01$`, got.Get("traceparent"))
	require.NotContains(t, got.Get("traceparent"), sc.SpanID().String(), "the receiver joins at the client span, not the job's")
	tracing.End(job, nil)

	ended := spans.GetSpans()
	require.Len(t, ended, 2)
	client, jobSpan := ended[0], ended[1]
	require.Equal(t, "POST", client.Name)
	require.Equal(t, oteltrace.SpanKindClient, client.SpanKind)
	require.Equal(t, "Error", client.Status.Code.String(), "a 5xx answer marks the client span failed")
	require.Equal(t, sc.SpanID(), client.Parent.SpanID())
	require.Equal(t, "job resume_event", jobSpan.Name)
	require.Equal(t, "00f067aa0ba902b7", jobSpan.Parent.SpanID().String())
	for _, s := range ended {
		found := false
		for _, a := range s.Attributes {
			found = found || (string(a.Key) == tracing.AttrRequestID && a.Value.AsString() == "req-1")
		}
		require.True(t, found, "span %s carries the request id", s.Name)
	}

	// A malformed traceparent starts a trace of its own.
	_, fresh := tracing.StartJob(context.Background(), "summary", "job-2", "00-zz-zz-01")
	require.True(t, fresh.SpanContext().IsValid())
	require.NotEqual(t, sc.TraceID(), fresh.SpanContext().TraceID())
	fresh.End()
}

func TestSamplerFollowsTheVariables(t *testing.T) {
	t.Parallel()
	p := sdktrace.SamplingParameters{TraceID: oteltrace.TraceID{1}}
	for name, want := range map[string]sdktrace.SamplingDecision{
		"always_on": sdktrace.RecordAndSample, "always_off": sdktrace.Drop, "traceidratio": sdktrace.Drop,
		"parentbased_always_on": sdktrace.RecordAndSample, "parentbased_always_off": sdktrace.Drop,
		"parentbased_traceidratio": sdktrace.Drop,
	} {
		require.Equal(t, want, tracing.Sampler(name, 0).ShouldSample(p).Decision, name)
	}
	require.Equal(t, sdktrace.RecordAndSample, tracing.Sampler("traceidratio", 1).ShouldSample(p).Decision)
}

// Setup sends the spans over OTLP/HTTP to the collector
// OTEL_EXPORTER_OTLP_ENDPOINT names (a loopback stand-in reading the real
// protocol's requests), under the service name given, and flushes them at
// shutdown.
func TestSetupExportsToTheCollectorTheVariablesName(t *testing.T) {
	type export struct {
		path, contentType string
		body              []byte
	}
	got := make(chan export, 4)
	collector := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		got <- export{r.URL.Path, r.Header.Get("Content-Type"), body}
		w.Header().Set("Content-Type", "application/x-protobuf")
		w.WriteHeader(http.StatusOK)
	}))
	defer collector.Close()
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", collector.URL)

	shutdown, err := tracing.Setup(context.Background(), tracing.Options{
		Protocol: "http/protobuf", Sampler: "parentbased_always_on", ServiceName: "appruntime-test", RequestIDFunc: requestIDOf,
	})
	require.NoError(t, err)
	ctx := context.WithValue(context.Background(), ctxKey{}, "req-exported-1")
	_, span := tracing.Start(ctx, "GET /healthz", oteltrace.SpanKindServer)
	span.End()
	require.NoError(t, shutdown(context.Background()))

	select {
	case e := <-got:
		require.Equal(t, "/v1/traces", e.path)
		require.Equal(t, "application/x-protobuf", e.contentType)
		for _, want := range []string{"appruntime-test", "GET /healthz", "req-exported-1"} {
			require.True(t, bytes.Contains(e.body, []byte(want)), "the export carries %q", want)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("no export reached the collector")
	}

	_, err = tracing.Setup(context.Background(), tracing.Options{Protocol: "http/json"})
	require.ErrorContains(t, err, "http/json")
}
