package requestid_test

import (
	"bytes"
	"context"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/hibiken/asynq"
	"github.com/stretchr/testify/require"

	"github.com/appruntime/appruntime/internal/logging"
	"github.com/appruntime/appruntime/internal/requestid"
	"github.com/appruntime/appruntime/internal/testkit"
	"github.com/appruntime/appruntime/jobs"
)

func TestValid(t *testing.T) {
	t.Parallel()
	for id, want := range map[string]bool{
		"4f1c2a9b0e7d-17":        true,
		"req_1.a:b-c":            true,
		"":                       false,
		"a b":                    false,
		"a\nlevel=error":         false,
		string(make([]byte, 65)): false,
	} {
		require.Equal(t, want, requestid.Valid(id), "%q", id)
	}
}

func TestWith(t *testing.T) {
	t.Parallel()
	ctx := requestid.With(context.Background(), "req-1")
	require.Equal(t, "req-1", requestid.From(ctx))
	require.Equal(t, "req-1", requestid.From(requestid.With(ctx, "bad id\n")), "an invalid id changes nothing")
	require.Empty(t, requestid.From(context.Background()))
}

// echoServer answers with the X-Request-Id it received.
func echoServer(t *testing.T) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Got", r.Header.Get(requestid.Header))
		w.Header().Set("Got-Count", string(rune('0'+len(r.Header.Values(requestid.Header)))))
	}))
	t.Cleanup(srv.Close)
	return srv
}

func TestTransportSendsTheRequestID(t *testing.T) {
	t.Parallel()
	srv := echoServer(t)
	client := &http.Client{Transport: requestid.Transport(srv.Client().Transport)}
	tests := []struct {
		name, ctxID, header, want string
	}{
		{"the context's id", "req-42", "", "req-42"},
		{"the caller's own header wins", "req-42", "theirs-1", "theirs-1"},
		{"no id, no header", "", "", ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			if tc.ctxID != "" {
				ctx = requestid.With(ctx, tc.ctxID)
			}
			req, err := http.NewRequestWithContext(ctx, http.MethodGet, srv.URL, nil)
			require.NoError(t, err)
			if tc.header != "" {
				req.Header.Set(requestid.Header, tc.header)
			}
			before := req.Header.Clone()
			res, err := client.Do(req)
			require.NoError(t, err)
			_ = res.Body.Close()
			require.Equal(t, tc.want, res.Header.Get("Got"))
			if tc.want != "" {
				require.Equal(t, "1", res.Header.Get("Got-Count"), "one header, never two")
			}
			require.Equal(t, before, req.Header, "the caller's request is not modified")
		})
	}
}

func TestTransportSkipsAnIDThatIsNotSane(t *testing.T) {
	t.Parallel()
	srv := echoServer(t)
	// logging.With takes any value; the transport still refuses to send it.
	ctx := logging.With(context.Background(), slog.String(logging.RequestID, "x\r\nEvil: 1"))
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, srv.URL, nil)
	require.NoError(t, err)
	res, err := (&http.Client{Transport: requestid.Transport(nil)}).Do(req)
	require.NoError(t, err)
	_ = res.Body.Close()
	require.Empty(t, res.Header.Get("Got"))
}

func TestTheTaskCarriesTheRequestID(t *testing.T) {
	t.Parallel()
	ctx := requestid.With(context.Background(), "req-7")
	task, err := requestid.NewTask(ctx, jobs.Summary{OutboxID: "o1"}, asynq.MaxRetry(0))
	require.NoError(t, err)
	require.Equal(t, map[string]string{requestid.TaskHeader: "req-7"}, task.Headers())
	args, err := jobs.Decode[jobs.Summary](task)
	require.NoError(t, err)
	require.Equal(t, "o1", args.OutboxID, "the payload is the job's arguments only")
	require.Equal(t, "req-7", requestid.From(requestid.FromTask(context.Background(), task)))

	bare, err := requestid.NewTask(context.Background(), jobs.Summary{OutboxID: "o1"})
	require.NoError(t, err)
	require.Nil(t, bare.Headers())
	require.Empty(t, requestid.From(requestid.FromTask(context.Background(), bare)))

	forged := asynq.NewTaskWithHeaders("summary", nil, map[string]string{requestid.TaskHeader: "a b\n"})
	require.Empty(t, requestid.From(requestid.FromTask(context.Background(), forged)))
}

// TestTheRequestIDCrossesTheQueue enqueues a job for a request through real
// Redis; the job, run by an asynq server with JobMiddleware, logs with the
// request's id and enqueues a follow-up job, which carries it too.
func TestTheRequestIDCrossesTheQueue(t *testing.T) {
	t.Parallel()
	rd := testkit.Redis(t)
	client := asynq.NewClientFromRedisClient(rd.Client)
	// One job at a time writes the log, and each writes before it reports
	// on seen, so reading it after both reports is race-free.
	var logs bytes.Buffer
	log := logging.New(&logs, slog.LevelInfo)
	seen := make(chan string, 2)

	mux := asynq.NewServeMux()
	mux.Use(requestid.JobMiddleware)
	mux.HandleFunc(jobs.ResumeEvent{}.Kind(), func(ctx context.Context, _ *asynq.Task) error {
		log.InfoContext(ctx, "resuming")
		seen <- requestid.From(ctx)
		next, err := requestid.NewTask(ctx, jobs.WebhookDelivery{EventID: "e1"}, asynq.Queue(rd.Queues.Events))
		if err != nil {
			return err
		}
		_, err = client.EnqueueContext(ctx, next)
		return err
	})
	mux.HandleFunc(jobs.WebhookDelivery{}.Kind(), func(ctx context.Context, _ *asynq.Task) error {
		log.InfoContext(ctx, "delivering")
		seen <- requestid.From(ctx)
		return nil
	})
	srv := asynq.NewServerFromRedisClient(rd.Client, asynq.Config{
		Concurrency: 1, Queues: map[string]int{rd.Queues.Events: 1},
		TaskCheckInterval: 50 * time.Millisecond, LogLevel: asynq.FatalLevel,
	})
	require.NoError(t, srv.Start(mux))
	t.Cleanup(srv.Shutdown)

	ctx := requestid.With(context.Background(), "api-run-123")
	task, err := requestid.NewTask(ctx, jobs.ResumeEvent{OutboxID: "o1"}, asynq.Queue(rd.Queues.Events))
	require.NoError(t, err)
	_, err = client.EnqueueContext(ctx, task)
	require.NoError(t, err)

	for range 2 {
		select {
		case id := <-seen:
			require.Equal(t, "api-run-123", id)
		case <-time.After(10 * time.Second):
			t.Fatal("the jobs did not run")
		}
	}
	require.Contains(t, logs.String(), `"msg":"resuming","request_id":"api-run-123"`)
	require.Contains(t, logs.String(), `"msg":"delivering","request_id":"api-run-123"`)
}
