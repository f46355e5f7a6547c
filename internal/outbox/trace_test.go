package outbox_test

import (
	"context"
	"testing"

	"github.com/alicebob/miniredis/v2"
	"github.com/hibiken/asynq"
	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	oteltrace "go.opentelemetry.io/otel/trace"
	"gorm.io/gorm"

	"github.com/appruntime/appruntime/internal/outbox"
	"github.com/appruntime/appruntime/internal/requestid"
	"github.com/appruntime/appruntime/internal/store"
	"github.com/appruntime/appruntime/internal/testkit"
	"github.com/appruntime/appruntime/internal/tracing"
	"github.com/appruntime/appruntime/models"
)

// TestARowCarriesItsTransactionsTraceToTheJob writes a row inside a traced
// span and relays it, on both dialects and, as in dev mode, to the
// in-process Redis: the row keeps the span's traceparent and the job's task
// header carries it, beside the request id. A row written with no span
// carries none.
func TestARowCarriesItsTransactionsTraceToTheJob(t *testing.T) {
	t.Parallel()
	tracing.Install(tracing.NewProvider(requestid.From, sdktrace.WithSyncer(tracetest.NewInMemoryExporter())))
	testkit.EachDialect(t, func(t *testing.T, st *store.Store) {
		mr := miniredis.RunT(t)
		rc := redis.NewClient(&redis.Options{Addr: mr.Addr()})
		t.Cleanup(func() { _ = rc.Close() })
		ctx, span := tracing.Start(requestid.With(context.Background(), "req-traced-1"), "approve", oteltrace.SpanKindServer)
		defer span.End()
		var traced, plain string
		require.NoError(t, st.Tx(ctx, func(tx *gorm.DB) error {
			var err error
			traced, err = outbox.Add(tx, outbox.KindResumeEvent, map[string]int{"n": 1})
			return err
		}))
		require.NoError(t, st.Tx(context.Background(), func(tx *gorm.DB) error {
			var err error
			plain, err = outbox.Add(tx, outbox.KindResumeEvent, map[string]int{"n": 2})
			return err
		}))
		want := tracing.Traceparent(ctx)
		require.Regexp(t, `^00-[0-9a-f]{32}-[0-9a-f]{16}-01$`, want)
		var row models.Outbox
		require.NoError(t, st.DB.Take(&row, "id = ?", traced).Error)
		require.NotNil(t, row.Traceparent)
		require.Equal(t, want, *row.Traceparent)

		relay := outbox.NewRelay(st, rc, "test:", "events", quiet)
		n, err := relay.RunOnce(context.Background())
		require.NoError(t, err)
		require.Equal(t, 2, n)
		in := asynq.NewInspectorFromRedisClient(rc)
		info, err := in.GetTaskInfo("events", traced)
		require.NoError(t, err)
		require.Equal(t, map[string]string{requestid.TaskHeader: "req-traced-1", tracing.TaskHeader: want}, info.Headers)
		info, err = in.GetTaskInfo("events", plain)
		require.NoError(t, err)
		require.Empty(t, info.Headers[tracing.TaskHeader], "a row written outside a span starts no trace")
	})
}
