package worker

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/hibiken/asynq"
	"github.com/stretchr/testify/require"

	"github.com/appruntime/appruntime/internal/apperr"
	"github.com/appruntime/appruntime/internal/logging"
	"github.com/appruntime/appruntime/internal/requestid"
	"github.com/appruntime/appruntime/jobs"
)

func TestRetryDelayFollowsTheKind(t *testing.T) {
	t.Parallel()
	webhook := asynq.NewTask(jobs.WebhookDelivery{}.Kind(), nil)
	require.LessOrEqual(t, retryDelay(0, nil, webhook), 1500*time.Millisecond)
	require.Equal(t, time.Hour, retryDelay(14, nil, webhook))
	other := asynq.NewTask(jobs.ResumeEvent{}.Kind(), nil)
	require.GreaterOrEqual(t, retryDelay(0, nil, other), 15*time.Second, "asynq's default for other kinds")
}

func TestUnretryable(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		err  error
		skip bool
	}{
		{apperr.Invalidf("bad"), true},
		{apperr.NotFoundf("gone"), true},
		{apperr.Wrap(errors.New("dial"), apperr.Forbidden, "refused"), true},
		{errors.New("connection reset"), false},
		{apperr.New(apperr.Unavailable, "busy"), false},
	} {
		err := unretryable(tc.err)
		require.Equal(t, tc.skip, errors.Is(err, asynq.SkipRetry), "%v", tc.err)
		require.ErrorIs(t, err, tc.err)
	}
	require.NoError(t, unretryable(nil))
}

// Every line a job's handler logs names the job's kind and the request that
// caused it; the job id comes from asynq's own context when a server runs it.
func TestJobLoggingPutsKindAndRequestIDOnEveryLine(t *testing.T) {
	t.Parallel()
	var buf bytes.Buffer
	log := logging.New(&buf, slog.LevelDebug)
	ctx := requestid.With(context.Background(), "req-from-api-1")
	task, err := requestid.NewTask(ctx, jobs.Summary{OutboxID: "o1"})
	require.NoError(t, err)
	h := jobLogging(asynq.HandlerFunc(func(ctx context.Context, t *asynq.Task) error {
		log.InfoContext(ctx, "first")
		log.WarnContext(ctx, "second")
		return nil
	}))
	require.NoError(t, h.ProcessTask(context.Background(), task))
	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	require.Len(t, lines, 2)
	for _, line := range lines {
		var rec map[string]any
		require.NoError(t, json.Unmarshal([]byte(line), &rec))
		require.Equal(t, jobs.Summary{}.Kind(), rec["kind"], line)
		require.Equal(t, "req-from-api-1", rec[logging.RequestID], line)
	}
}

func TestSplitConcurrency(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		concurrency, servers int
		want                 []int
	}{
		{10, 4, []int{3, 3, 2, 2}},
		{16, 4, []int{4, 4, 4, 4}},
		{3, 4, []int{1, 1, 1}}, // never a server without a job slot
		{5, 1, []int{5}},
		{5, 0, []int{5}}, // unnamed: one server
		{0, 4, []int{0}}, // asynq's own default, on one server
	} {
		require.Equal(t, c.want, splitConcurrency(c.concurrency, c.servers), "%d among %d", c.concurrency, c.servers)
	}
}
