package e2e_test

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/attribute"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	oteltrace "go.opentelemetry.io/otel/trace"

	"github.com/appruntime/appruntime/internal/outbox"
	"github.com/appruntime/appruntime/internal/requestid"
	"github.com/appruntime/appruntime/internal/tracing"
	"github.com/appruntime/appruntime/models"
)

// traces is the in-memory exporter of every span this test binary makes
// once a trace test has turned tracing on (the provider is the process's,
// so it is installed once and stays).
var (
	traceOnce sync.Once
	traces    *tracetest.InMemoryExporter
)

func startTracing() *tracetest.InMemoryExporter {
	traceOnce.Do(func() {
		traces = tracetest.NewInMemoryExporter()
		tracing.Install(tracing.NewProvider(requestid.From, sdktrace.WithSyncer(traces)))
	})
	return traces
}

// spansOf returns the ended spans of trace id, by name.
func spansOf(id oteltrace.TraceID) map[string]tracetest.SpanStub {
	out := map[string]tracetest.SpanStub{}
	for _, s := range traces.GetSpans() {
		if s.SpanContext.TraceID() == id {
			out[s.Name] = s
		}
	}
	return out
}

func attrOf(s tracetest.SpanStub, key string) string {
	for _, a := range s.Attributes {
		if a.Key == attribute.Key(key) {
			return a.Value.String()
		}
	}
	return ""
}

// newTraceparent is a sampled W3C traceparent with a fresh trace id, as an
// upstream proxy or the caller's own tracer would send it.
func newTraceparent(t *testing.T) (string, oteltrace.TraceID, oteltrace.SpanID) {
	t.Helper()
	var tid oteltrace.TraceID
	var sid oteltrace.SpanID
	copy(tid[:], []byte(models.NewID())[:16])
	copy(sid[:], []byte(models.NewID())[8:16])
	require.True(t, tid.IsValid() && sid.IsValid())
	return "00-" + tid.String() + "-" + sid.String() + "-01", tid, sid
}

// postTraced posts a runtime verb with a traceparent and a request id.
func postTraced(t *testing.T, url, token, traceparent, id string, body any) (int, []byte) {
	t.Helper()
	raw, err := json.Marshal(body)
	require.NoError(t, err)
	req, err := http.NewRequest(http.MethodPost, url, bytes.NewReader(raw))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set(requestid.Header, id)
	req.Header.Set("traceparent", traceparent)
	res, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer res.Body.Close()
	out, err := io.ReadAll(res.Body)
	require.NoError(t, err)
	return res.StatusCode, out
}

// requireEverySpanCarries checks that every span of the trace names the
// request id.
func requireEverySpanCarries(t *testing.T, spans map[string]tracetest.SpanStub, id string) {
	t.Helper()
	for name, s := range spans {
		require.Equal(t, id, attrOf(s, tracing.AttrRequestID), "span %q carries the request id", name)
	}
}

// TestOneTraceSpansAPIQueueAndWorkerForARun follows a /run's trace from
// the caller's traceparent through the API's span, the run_tool task's
// header and the worker's job span.
func TestOneTraceSpansAPIQueueAndWorkerForARun(t *testing.T) {
	startTracing()
	rs := newRunStack(t)
	tp, traceID, callerSpan := newTraceparent(t)
	id := "e2e-run-trace-" + models.NewID()[:8]

	status, raw := postTraced(t, rs.URL+"/api/app-runtime/run", rs.token, tp, id,
		map[string]any{"op": "double", "payload": map[string]any{"x": 2}})
	require.Equal(t, http.StatusOK, status, string(raw))

	var spans map[string]tracetest.SpanStub
	require.Eventually(t, func() bool {
		spans = spansOf(traceID)
		_, api := spans["POST /api/app-runtime/run"]
		_, job := spans["job run_tool"]
		return api && job
	}, 10*time.Second, 20*time.Millisecond, "the run's spans join the caller's trace")
	server, job := spans["POST /api/app-runtime/run"], spans["job run_tool"]
	require.Equal(t, oteltrace.SpanKindServer, server.SpanKind)
	require.Equal(t, callerSpan, server.Parent.SpanID(), "the API's span is the caller's span's child")
	require.Equal(t, "200", attrOf(server, "http.response.status_code"))
	require.Equal(t, "/api/app-runtime/run", attrOf(server, "http.route"))
	require.Equal(t, rs.tenant.Workspace.ID, attrOf(server, tracing.AttrWorkspaceID))
	require.Equal(t, oteltrace.SpanKindConsumer, job.SpanKind)
	require.Equal(t, server.SpanContext.SpanID(), job.Parent.SpanID(), "the worker's job continues the request's span")
	require.Equal(t, "run_tool", attrOf(job, tracing.AttrJobKind))
	requireEverySpanCarries(t, spans, id)
}

// TestOneTraceSpansAnApprovalItsOutboxRowResumeAndWebhook follows an
// approval's trace through the outbox row its transaction wrote, the resume
// job the relay enqueued from it, the webhook job the resume enqueued, and
// the delivery, whose traceparent the receiver can join.
func TestOneTraceSpansAnApprovalItsOutboxRowResumeAndWebhook(t *testing.T) {
	startTracing()
	s := newStack(t)
	startWorker(t, s.P)
	hook := newReceiver(t)
	st := setUp(t, s, hook)
	tp, traceID, _ := newTraceparent(t)
	id := "e2e-approval-trace-" + models.NewID()[:8]

	status, raw := postTraced(t, s.URL+"/api/app-runtime/action", st.sessionToken, tp, id,
		map[string]any{"op": "approve_invoice", "payload": approvePayload})
	require.Equal(t, http.StatusOK, status, string(raw))

	var row models.Outbox
	require.NoError(t, s.Store.DB.Where("kind = ?", outbox.KindResumeEvent).Take(&row).Error)
	require.NotNil(t, row.Traceparent, "the outbox row keeps the trace of the transaction that wrote it")
	require.Contains(t, *row.Traceparent, traceID.String())

	got := hook.waitOne(t)
	require.Len(t, got, 1)
	received := got[0].Header.Get("traceparent")
	require.Regexp(t, `^00-`+traceID.String()+`-[0-9a-f]{16}-01$`, received, "the delivery carries a traceparent of the approval's trace")

	names := []string{"POST /api/app-runtime/action", "job resume_event", "job webhook_delivery", "POST"}
	var spans map[string]tracetest.SpanStub
	require.Eventually(t, func() bool {
		spans = spansOf(traceID)
		for _, n := range names {
			if _, ok := spans[n]; !ok {
				return false
			}
		}
		return true
	}, 10*time.Second, 20*time.Millisecond, "every hop's span joins the approval's trace")
	action, resume, deliver, client := spans[names[0]], spans[names[1]], spans[names[2]], spans[names[3]]
	require.Equal(t, st.workspaceID, attrOf(action, tracing.AttrWorkspaceID))
	require.Equal(t, action.SpanContext.SpanID(), resume.Parent.SpanID(), "the resume job continues the approval through its outbox row")
	require.Equal(t, resume.SpanContext.SpanID(), deliver.Parent.SpanID(), "the webhook job continues the resume job")
	require.Equal(t, deliver.SpanContext.SpanID(), client.Parent.SpanID())
	require.Equal(t, oteltrace.SpanKindClient, client.SpanKind)
	require.Equal(t, "204", attrOf(client, "http.response.status_code"))
	require.Contains(t, received, client.SpanContext.SpanID().String(), "the receiver joins the trace at the delivery's own span")
	requireEverySpanCarries(t, spans, id)
}
