package limit_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/appruntime/appruntime/internal/apperr"
	"github.com/appruntime/appruntime/internal/limit"
	"github.com/appruntime/appruntime/internal/testkit"
)

func TestSignInAccountThrottle(t *testing.T) {
	t.Parallel()
	env := testkit.Redis(t)
	th := limit.NewSignInThrottle(env.Client, env.Prefix)
	ctx := context.Background()
	for i := range limit.SignInAccountBurst {
		// Each try from another address: only the account's budget is spent.
		require.NoError(t, th.Attempt(ctx, "Admin@Example.test", fmt.Sprintf("10.0.0.%d", i)), "try %d", i+1)
	}
	err := th.Attempt(ctx, " admin@example.TEST", "10.0.1.1")
	require.Equal(t, apperr.RateLimited, apperr.CodeOf(err), "the same account, however it is spelled: %v", err)
	var ae *apperr.Error
	require.ErrorAs(t, err, &ae)
	require.Greater(t, ae.RetryAfter, limit.SignInAccountEvery-5*time.Second)
	require.LessOrEqual(t, ae.RetryAfter, limit.SignInAccountEvery, "the real admin waits a minute at most")
	_, status, msg := apperr.Public(err)
	require.Equal(t, 429, status)
	require.Equal(t, "too many sign-in attempts", msg)

	require.NoError(t, th.Attempt(ctx, "someone-else@example.test", "10.0.1.1"), "another account has its own budget")

	require.NoError(t, th.Succeeded(ctx, "ADMIN@example.test"))
	require.NoError(t, th.Attempt(ctx, "admin@example.test", "10.0.1.2"), "a sign-in clears the account's tries")

	keys, err := env.Client.Keys(ctx, env.Prefix+"rate:signin:*").Result()
	require.NoError(t, err)
	require.NotEmpty(t, keys)
	for _, k := range keys {
		require.NotContains(t, strings.ToLower(k), "example", "no email in a key: %s", k)
	}
}

func TestSignInAddressThrottle(t *testing.T) {
	t.Parallel()
	env := testkit.Redis(t)
	th := limit.NewSignInThrottle(env.Client, env.Prefix)
	ctx := context.Background()
	for i := range limit.SignInAddressBurst {
		require.NoError(t, th.Attempt(ctx, fmt.Sprintf("user%d@example.test", i), "192.0.2.7"), "try %d", i+1)
	}
	err := th.Attempt(ctx, "fresh@example.test", "192.0.2.7")
	require.Equal(t, apperr.RateLimited, apperr.CodeOf(err), "one address spraying many accounts")
	require.LessOrEqual(t, apperr.RetryAfterSeconds(err), int(limit.SignInAddressEvery/time.Second))
	require.NoError(t, th.Attempt(ctx, "fresh@example.test", "192.0.2.8"), "the account itself was not spent by the refusal")
}

func TestSignInThrottleWithoutRedisIsUnavailable(t *testing.T) {
	t.Parallel()
	rc := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1", MaxRetries: -1, DialTimeout: time.Second})
	t.Cleanup(func() { _ = rc.Close() })
	err := limit.NewSignInThrottle(rc, "x:").Attempt(context.Background(), "a@example.test", "192.0.2.1")
	require.Equal(t, apperr.Unavailable, apperr.CodeOf(err), "%v", err)
}
