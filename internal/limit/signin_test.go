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

// TestSignInAccountThrottle: one address guesses one account
// SignInAccountBurst times, then waits; its refused tries spend nothing of
// the account's pool, so the real admin, elsewhere, signs in.
func TestSignInAccountThrottle(t *testing.T) {
	t.Parallel()
	env := testkit.Redis(t)
	th := limit.NewSignInThrottle(env.Client, env.Prefix)
	ctx := context.Background()
	guess := limit.SignInTry{Account: "Admin@Example.test", Address: "10.0.0.1"}
	for i := range limit.SignInAccountBurst {
		require.NoError(t, th.Attempt(ctx, guess), "try %d", i+1)
	}
	guess.Account = " admin@example.TEST"
	for range limit.SignInPoolBurst { // more refusals than the pool holds, fewer than the address cell
		err := th.Attempt(ctx, guess)
		require.Equal(t, apperr.RateLimited, apperr.CodeOf(err), "the same account, however it is spelled: %v", err)
		var ae *apperr.Error
		require.ErrorAs(t, err, &ae)
		require.Greater(t, ae.RetryAfter, limit.SignInAccountEvery-5*time.Second)
		require.LessOrEqual(t, ae.RetryAfter, limit.SignInAccountEvery, "a guesser waits a minute between tries")
		_, status, msg := apperr.Public(err)
		require.Equal(t, 429, status)
		require.Equal(t, "too many sign-in attempts", msg)
	}
	admin := limit.SignInTry{Account: "admin@example.test", Address: "10.0.9.9"}
	require.NoError(t, th.Attempt(ctx, admin), "one guesser locks nobody out")
	require.NoError(t, th.Attempt(ctx, limit.SignInTry{Account: "someone-else@example.test", Address: "10.0.0.1"}),
		"another account has its own budget at that address")

	require.NoError(t, th.Succeeded(ctx, limit.SignInTry{Account: "ADMIN@example.test", Address: "10.0.0.1"}))
	require.NoError(t, th.Attempt(ctx, guess), "a sign-in clears the account's tries from its address")

	keys, err := env.Client.Keys(ctx, env.Prefix+"rate:signin:*").Result()
	require.NoError(t, err)
	require.NotEmpty(t, keys)
	for _, k := range keys {
		require.NotContains(t, strings.ToLower(k), "example", "no email in a key: %s", k)
	}
}

// TestSignInPoolAndKnownDevices: unknown clients share the account's pool,
// so many addresses together guess no faster than it refills; a browser the
// account signed in from has its own budget, and signs in whatever they do.
func TestSignInPoolAndKnownDevices(t *testing.T) {
	t.Parallel()
	env := testkit.Redis(t)
	th := limit.NewSignInThrottle(env.Client, env.Prefix)
	ctx := context.Background()
	const account = "admin@example.test"
	for i := range limit.SignInPoolBurst {
		require.NoError(t, th.Attempt(ctx, limit.SignInTry{Account: account, Address: fmt.Sprintf("10.1.0.%d", i)}), "try %d", i+1)
	}
	err := th.Attempt(ctx, limit.SignInTry{Account: account, Address: "10.1.1.1"})
	require.Equal(t, apperr.RateLimited, apperr.CodeOf(err), "a fresh address, the pool spent: %v", err)
	require.LessOrEqual(t, apperr.RetryAfterSeconds(err), int(limit.SignInPoolEvery/time.Second))

	known := limit.SignInTry{Account: account, Address: "10.1.1.1", Device: "device-1"}
	for i := range limit.SignInAccountBurst {
		require.NoError(t, th.Attempt(ctx, known), "a known browser, try %d", i+1)
	}
	require.Equal(t, apperr.RateLimited, apperr.CodeOf(th.Attempt(ctx, known)), "a known browser guesses no faster")
	require.NoError(t, th.Attempt(ctx, limit.SignInTry{Account: account, Address: "10.1.1.2", Device: "device-2"}), "another known browser")

	require.NoError(t, th.Succeeded(ctx, known))
	require.NoError(t, th.Attempt(ctx, known), "a sign-in clears its browser's tries")
	err = th.Attempt(ctx, limit.SignInTry{Account: account, Address: "10.1.1.3"})
	require.Equal(t, apperr.RateLimited, apperr.CodeOf(err), "but hands the pool nothing back: %v", err)
}

func TestSignInAddressThrottle(t *testing.T) {
	t.Parallel()
	env := testkit.Redis(t)
	th := limit.NewSignInThrottle(env.Client, env.Prefix)
	ctx := context.Background()
	for i := range limit.SignInAddressBurst {
		require.NoError(t, th.Attempt(ctx, limit.SignInTry{Account: fmt.Sprintf("user%d@example.test", i), Address: "192.0.2.7"}), "try %d", i+1)
	}
	err := th.Attempt(ctx, limit.SignInTry{Account: "fresh@example.test", Address: "192.0.2.7"})
	require.Equal(t, apperr.RateLimited, apperr.CodeOf(err), "one address spraying many accounts")
	require.LessOrEqual(t, apperr.RetryAfterSeconds(err), int(limit.SignInAddressEvery/time.Second))
	require.NoError(t, th.Attempt(ctx, limit.SignInTry{Account: "fresh@example.test", Address: "192.0.2.7", Device: "d"}),
		"a known browser at that address is not held back by others' tries")
	require.NoError(t, th.Attempt(ctx, limit.SignInTry{Account: "fresh@example.test", Address: "192.0.2.8"}), "the account itself was not spent by the refusal")
}

func TestSignInThrottleWithoutRedisIsUnavailable(t *testing.T) {
	t.Parallel()
	rc := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1", MaxRetries: -1, DialTimeout: time.Second})
	t.Cleanup(func() { _ = rc.Close() })
	err := limit.NewSignInThrottle(rc, "x:").Attempt(context.Background(), limit.SignInTry{Account: "a@example.test", Address: "192.0.2.1"})
	require.Equal(t, apperr.Unavailable, apperr.CodeOf(err), "%v", err)
}
