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
