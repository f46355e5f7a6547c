package worker

import (
	"errors"
	"testing"
	"time"

	"github.com/hibiken/asynq"
	"github.com/stretchr/testify/require"

	"github.com/appruntime/appruntime/internal/apperr"
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
